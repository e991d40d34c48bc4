#!/bin/bash
# libtutti-mpi against the MPI library alone: the same MPI-only benchmark
# (tests/interpose/mpi_only_bench.cpp) run without and with
# LD_PRELOAD=libtutti-mpi.so, in alternating jobs, both timing methods.
# Prints a markdown table (best of RUNS per cell, time with the library /
# time without) and keeps the raw CSV in docs/perf/.
#   NP=2 RUNS=3 MAX_BYTES=67108864 METHODS="barrier b2b" [COLLECTIVES=bcast,scatter] \
#     ./scripts/compare-interpose.sh
# ITERS=N times N calls per cell (else by size: 200 up to 64 KiB); the
# library's policy tries each side again after 1,024 calls of a size class,
# then 4x later each time, which the default cells end before.
# OVERHEAD=1 adds the layer's own cost: 8-byte calls on MPI_COMM_SELF,
# TUTTI_MPI=0 against no library.
# SHAPE=2x2 (as root) runs every job on emulated nodes instead
# (tests/cluster/cluster.sh: shared memory inside a node, TCP between); the
# shape sets the rank count.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/mpi-env.sh
NP=${NP:-2} RUNS=${RUNS:-3} MAX_BYTES=${MAX_BYTES:-67108864} METHODS=${METHODS:-barrier b2b}
build=${BUILD_DIR:-build}
bench=$build/tests/interpose/mpi-only-bench
lib=$(realpath "$build/lib/interpose/libtutti-mpi.so")
[ -x "$bench" ] && [ -f "$lib" ] || { echo "build first: ./scripts/setup.sh"; exit 1; }
bench=$(realpath "$bench")
if [ -n "${SHAPE:-}" ]; then
  # The cluster's own mpirun options: --host, --bind-to none, its network,
  # yielding (its shapes put more ranks than cores).
  launch=(tests/cluster/cluster.sh run "$SHAPE" --timeout 600 --)
  args=()
  out=docs/perf/interpose-cluster-$SHAPE-$(date +%Y%m%d-%H%M%S).csv
else
  out=docs/perf/interpose-np$NP-$(date +%Y%m%d-%H%M%S).csv
  bind=core; [ "$NP" -le "$(nproc)" ] || bind=none
  launch=(mpirun)
  args=(-np "$NP" $(oversubscribe_args "$NP") --bind-to $bind)
fi
echo "variant,run,collective,bytes,method,ranks,time_us" >"$out"
for run in $(seq "$RUNS"); do
  for method in $METHODS; do
    for variant in mpi tutti-mpi; do
      pre=()
      [ "$variant" = tutti-mpi ] && pre=(-x LD_PRELOAD="$lib")
      "${launch[@]}" "${args[@]}" "${pre[@]}" "$bench" --method "$method" --max-bytes "$MAX_BYTES" \
          ${COLLECTIVES:+--collectives "$COLLECTIVES"} ${ITERS:+--iters "$ITERS"} |
        grep -v '^collective' | sed "s/^/$variant,$run,/" >>"$out"
    done
  done
done
if [ "${OVERHEAD:-0}" = 1 ]; then
  for run in $(seq "$RUNS"); do
    echo "no library:      $(mpirun -np 1 "$bench" --overhead | tail -1)"
    echo "TUTTI_MPI=0:     $(mpirun -np 1 -x LD_PRELOAD="$lib" -x TUTTI_MPI=0 "$bench" --overhead | tail -1)"
  done
fi
python3 - "$out" <<'PY'
import csv, sys, collections
best = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    key = (r["method"], r["collective"], int(r["bytes"]))
    t = float(r["time_us"])
    best[key][r["variant"]] = min(t, best[key].get(r["variant"], float("inf")))
worst = 0
for method in sorted({k[0] for k in best}):
    print(f"\n{method}: time per call (us), best of runs; ratio = with libtutti-mpi / MPI alone\n")
    print("| collective | bytes | MPI | with libtutti-mpi | ratio |")
    print("|---|---:|---:|---:|---:|")
    for k in sorted(k for k in best if k[0] == method):
        v = best[k]
        ratio = v["tutti-mpi"] / v["mpi"]
        worst = max(worst, ratio)
        print(f"| {k[1]} | {k[2]} | {v['mpi']:.2f} | {v['tutti-mpi']:.2f} | {ratio:.2f} |")
print(f"\nworst ratio: {worst:.2f}; raw: {sys.argv[1]}")
PY
