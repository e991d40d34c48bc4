#!/usr/bin/env bash
# Two builds of tutti against each other (before and after a change), each
# also against the MPI library in the same job: RUNS rounds of one
# tutti-bench --compare-mpi job per (method, build), alternating builds, so
# that both see the same speed states of the machine. Prints per method and
# size the median over rounds of each build's time / Open MPI's and of the
# new build's time / the old one's, apart for each speed state the machine
# was in before a round (speed_state in scripts/mpi-env.sh); RAW=FILE keeps
# the rows. Environment variables reach the ranks (one node).
#   OLD=/tmp/old/build NEW=build OP=reduce NP=2 RUNS=4 MIN_BYTES=1K MAX_BYTES=1M \
#     ./scripts/compare-builds.sh [extra tutti-bench args, e.g. --step-factor 4]
# An old build: git worktree add /tmp/old <commit> && (cd /tmp/old &&
#   meson setup build && ninja -C build apps/tutti-bench).
#   ITERS (100), METHODS ("barrier back-to-back")
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/mpi-env.sh
old=${OLD:?OLD=<old build dir> is required}
new=${NEW:-build}
op=${OP:?OP=<collective> is required}
np=${NP:-2}
runs=${RUNS:-4}
raw=${RAW:-$(mktemp)}
[ -n "${RAW:-}" ] || trap 'rm -f "$raw"' EXIT
bind=core; [ "$np" -le "$(nproc)" ] || bind=none
: >"$raw"
for run in $(seq "$runs"); do
  state=$(speed_state "$np" "$new")
  for method in ${METHODS:-barrier back-to-back}; do
    flag=(); [ "$method" = back-to-back ] && flag=(--back-to-back)
    for variant in old new; do
      dir=$old; [ "$variant" = new ] && dir=$new
      mpirun -np "$np" $(oversubscribe_args "$np") --bind-to $bind "$dir/apps/tutti-bench" \
          --op "$op" --min-bytes "${MIN_BYTES:-1K}" --max-bytes "${MAX_BYTES:-1M}" \
          --iters "${ITERS:-100}" --compare-mpi --format csv "${flag[@]}" "$@" |
        grep -v '^collective' | sed "s/^/$variant,$method,$state,/" >>"$raw"
    done
  done
done
python3 - "$raw" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    # variant,method,state, then tutti-bench's columns: collective,bytes,...,time_us (7),...,mpi_time_us (11)
    if len(f) < 15:
        continue
    rows[(f[2], f[1], int(f[4]), f[0])].append((float(f[10]), float(f[14])))
med = statistics.median
for state, method in sorted({k[:2] for k in rows}):
    print(f"{state}, {method}: bytes  old us/MPI us=ratio | new us/MPI us=ratio  new/old (medians of rounds)")
    for size in sorted({k[2] for k in rows if k[:2] == (state, method)}):
        o, n = rows.get((state, method, size, "old")), rows.get((state, method, size, "new"))
        if not o or not n:
            continue
        ot, om = med(x[0] for x in o), med(x[1] for x in o)
        nt, nm = med(x[0] for x in n), med(x[1] for x in n)
        print(f"{size:>10}  {ot:.2f}/{om:.2f}={ot/om:.2f} | {nt:.2f}/{nm:.2f}={nt/nm:.2f}  {nt/ot:.2f}"
              f"  (n={len(o)}/{len(n)})")
PY
