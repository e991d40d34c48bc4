#!/usr/bin/env bash
# Compares tutti's algorithms for one collective with each other and with
# the MPI library's own collective: for RUNS rounds, one tutti-bench
# --compare-mpi job per (variant, method), alternating, so that every
# variant sees the same speed states of the machine. Prints, per method and
# size, the median over runs of tutti's time / the MPI library's time per
# variant, with the algorithm that ran; RAW=FILE keeps the rows. On one
# node, each job is tagged with the speed state the machine was in just
# before it (the cache-line round trip between ranks 0 and 1, tutti-bench
# --bounds: "close" up to FAR_RTT_US=0.25 us, else "far"; see
# scripts/perf-check.sh), and the medians are per state.
#   OP=allgather VARIANTS="cma shm auto TUTTI_CMA=0" NP=2 RUNS=3 \
#     ./scripts/compare-algorithms.sh [extra tutti-bench args]
# A variant is an algorithm name (forced with --algorithm), "auto" (the
# dispatcher's choice) or VAR=VALUE (the dispatcher's choice with that
# environment variable set on every rank; several joined by "+":
# UCX_RNDV_THRESH=4M+UCX_TCP_PUT_ENABLE=y). SHAPE=2x2 runs on the emulated
# cluster (tests/cluster/cluster.sh, as root) instead of NP ranks here.
#   MIN_BYTES (4K), MAX_BYTES (64M), STEP (4), ITERS (20),
#   METHODS ("barrier back-to-back"), MPI_ARGS (more mpirun options, e.g.
#   "--map-by node": ranks numbered round-robin over the nodes)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null
. scripts/mpi-env.sh

op=${OP:?OP=<collective> is required}
variants=${VARIANTS:?VARIANTS=\"alg1 alg2 ...\" is required}
np=${NP:-2}
shape=${SHAPE:-}
raw=${RAW:-$(mktemp)}
[ -n "${RAW:-}" ] || trap 'rm -f "$raw"' EXIT
: >"$raw"
read -ra launch <<<"$(oversubscribe_args "$np")"

run_job() {  # env-args... -- bench-args...
  local envs=() mpi_args
  read -ra mpi_args <<<"${MPI_ARGS:-}"
  while [ "$1" != -- ]; do envs+=(-x "$1"); shift; done
  shift
  if [ -n "$shape" ]; then
    tests/cluster/cluster.sh run "$shape" --timeout 900 -- "${mpi_args[@]}" "${envs[@]}" "$PWD/build/apps/tutti-bench" "$@"
  else
    mpirun -np "$np" "${launch[@]}" --bind-to none "${mpi_args[@]}" "${envs[@]}" build/apps/tutti-bench "$@"
  fi
}

state_of_machine() {
  if [ -n "$shape" ]; then echo any; else speed_state "$np"; fi
}

for run in $(seq 1 "${RUNS:-3}"); do
  for variant in $variants; do
    for method in ${METHODS:-barrier back-to-back}; do
      envs=() select=()
      case $variant in
        auto) ;;
        *=*) IFS=+ read -ra envs <<<"$variant" ;;
        *) select=(--algorithm "$variant") ;;
      esac
      method_args=()
      [ "$method" = back-to-back ] && method_args=(--back-to-back)
      state=$(state_of_machine)
      echo "compare-algorithms: run $run $op $variant $method ($state)" >&2
      run_job "${envs[@]}" -- --op "$op" "${select[@]}" --compare-mpi --format csv \
        --min-bytes "${MIN_BYTES:-4K}" --max-bytes "${MAX_BYTES:-64M}" \
        --step-factor "${STEP:-4}" --iters "${ITERS:-20}" "${method_args[@]}" "$@" |
        awk -F, -v run="$run" -v variant="$variant" -v method="$method" -v state="$state" \
          '$2 ~ /^[0-9]+$/ {print run, variant, method, state, $0}' >>"$raw"
    done
  done
done

python3 - "$raw" "$variants" <<'PY'
import collections, csv, statistics, sys
rows = collections.defaultdict(list)
ran = collections.defaultdict(set)
for line in open(sys.argv[1]):
    run, variant, method, state, rest = line.split(" ", 4)
    f = next(csv.reader([rest]))
    # collective,bytes,count,dtype,redop,root,algorithm,time_us,algbw,busbw,wrong,mpi_time_us,...
    if f[-1].strip('"'):
        print(f"error: {variant} {method} {f[1]} B: {f[-1]}")
        continue
    key = (state, method, int(f[1]), variant)
    rows[key].append((float(f[7]), float(f[11])))
    ran[key].add(f[6])
variants = sys.argv[2].split()
for state in sorted({k[0] for k in rows}):
  for method in ("barrier", "back-to-back"):
    sizes = sorted({k[2] for k in rows if k[:2] == (state, method)})
    if not sizes: continue
    print(f"{state}, {method}: tutti us / MPI us = ratio (median of jobs) [algorithm that ran]")
    for b in sizes:
        cells = []
        for v in variants:
            got = rows.get((state, method, b, v))
            if not got: continue
            t = statistics.median(x[0] for x in got); m = statistics.median(x[1] for x in got)
            cells.append(f"{v} [{'/'.join(sorted(ran[(state, method, b, v)]))}] "
                         f"{t:.2f}/{m:.2f}={t / m:.2f} (n={len(got)})")
        print(f"{b:>10}  " + " | ".join(cells))
PY
