#!/usr/bin/env bash
# Compares tutti with the MPI library's own collectives on this machine:
# tutti-bench --compare-mpi for every collective, RUNS times, then per size
# the median over runs of tutti's and MPI's times (each already the median of
# --iters iterations of the slowest rank), interleaved in one job.
# Both ways of timing (METHODS, default "barrier back-to-back": a barrier
# before each call, or calls back to back) write docs/perf/<name>-<method>.csv,
# a markdown table <name>-<method>.md and a busbw-vs-size plot
# <name>-<method>.png (gnuplot).
#   NP=2 RUNS=3 ITERS=20 MAX_BYTES=64M NAME=np2 COLLECTIVES="allreduce ..." \
#     ./scripts/compare-mpi.sh [extra tutti-bench args]
# On the emulated cluster (tests/cluster/cluster.sh, as root), SHAPE gives
# the nodes instead of NP, e.g. SHAPE=2x2 or SHAPE=4x2; MPI_ARGS adds mpirun
# options, e.g. MPI_ARGS="--mca coll_han_priority 100" to compare with
# Open MPI's hierarchical collectives (HAN).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null
if ! command -v gnuplot >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null
fi
. scripts/mpi-env.sh

shape=${SHAPE:-}
np=${NP:-2}
if [ -n "$shape" ]; then
  # Ranks of the shape: 2x2 -> 4, 2,1,2 -> 5.
  if [[ $shape =~ ^([0-9]+)x([0-9]+)$ ]]; then np=$((BASH_REMATCH[1] * BASH_REMATCH[2]))
  else np=$(( $(tr ',' '+' <<<"$shape") )); fi
fi
read -ra mpi_args <<<"${MPI_ARGS:-}"
runs=${RUNS:-3}
iters=${ITERS:-20}
max_bytes=${MAX_BYTES:-64M}
name=${NAME:-np$np}
collectives=${COLLECTIVES:-"allreduce allgather reduce_scatter bcast alltoall alltoallv reduce gather scatter"}
out=docs/perf
mkdir -p "$out"
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT

read -ra launch <<<"$(oversubscribe_args "$np")"
# One job: on this node, or on the emulated cluster (which oversubscribes
# and yields itself, and needs the program's absolute path).
run_job() {
  if [ -n "$shape" ]; then
    tests/cluster/cluster.sh run "$shape" --timeout 900 -- "${mpi_args[@]}" "$PWD/build/apps/tutti-bench" "$@"
  else
    mpirun -np "$np" "${launch[@]}" --bind-to none "${mpi_args[@]}" build/apps/tutti-bench "$@"
  fi
}
# Both ways of timing, each in its own files (<name>-barrier.*,
# <name>-back-to-back.*): a barrier before every call, and calls back to back.
for method in ${METHODS:-barrier back-to-back}; do
method_args=()
[ "$method" = back-to-back ] && method_args=(--back-to-back)
rm -f "$raw"/*.csv
for run in $(seq 1 "$runs"); do
  for coll in $collectives; do
    echo "compare-mpi: run $run/$runs $coll (np=$np${shape:+, nodes $shape}, $method)" >&2
    run_job \
      --op "$coll" --compare-mpi --format csv --min-bytes 8 --max-bytes "$max_bytes" \
      --iters "$iters" --warmup 3 "${method_args[@]}" "$@" >"$raw/$run-$coll.csv"
  done
done

python3 - "$raw" "$out/$name-$method" "$np${shape:+ on nodes $shape}${MPI_ARGS:+ (mpirun $MPI_ARGS)}" "$runs" <<'PY'
import csv, glob, os, statistics, sys, datetime
raw, base, np_, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = {}
for path in sorted(glob.glob(os.path.join(raw, "*.csv"))):
    for r in csv.DictReader(open(path)):
        key = (r["collective"], int(r["bytes"]))
        rows.setdefault(key, []).append(r)
# With --bounds the rows also carry the memcpy reference and the cache-line
# round trip; the table then shows them (medians over the runs too).
bounds = all("of_bound" in rs[0] for rs in rows.values())
with open(base + ".csv", "w") as f:
    f.write("collective,bytes,algorithm,tutti_us,mpi_us,tutti_busbw,mpi_busbw,ratio"
            + (",of_bound,rtt_us" if bounds else "") + "\n")
    table = []
    for (coll, size), rs in sorted(rows.items()):
        t = statistics.median(float(r["time_us"]) for r in rs)
        m = statistics.median(float(r["mpi_time_us"]) for r in rs)
        tb = statistics.median(float(r["busbw_gbs"]) for r in rs)
        mb = statistics.median(float(r["mpi_busbw_gbs"]) for r in rs)
        algos = sorted({r["algorithm"] for r in rs})
        ratio = t / m if m > 0 else float("nan")
        extra = ()
        if bounds:
            extra = (statistics.median(float(r["of_bound"]) for r in rs),
                     statistics.median(float(r["rtt_us"]) for r in rs))
        f.write(f"{coll},{size},{'/'.join(algos)},{t:.3f},{m:.3f},{tb:.4f},{mb:.4f},{ratio:.3f}"
                + "".join(f",{x:.4f}" for x in extra) + "\n")
        table.append((coll, size, "/".join(algos), t, m, tb, mb, ratio, extra))
with open(base + ".md", "w") as f:
    f.write(f"np={np_}, medians of {runs} runs, {datetime.date.today()}\n\n")
    f.write("| collective | bytes | algorithm | tutti (us) | MPI (us) | tutti busbw (GB/s) | MPI busbw (GB/s) | tutti/MPI time |"
            + (" of memcpy bound | rtt (us) |" if bounds else "") + "\n")
    f.write("|---|---:|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if bounds else "") + "\n")
    for coll, size, algo, t, m, tb, mb, ratio, extra in table:
        f.write(f"| {coll} | {size} | {algo} | {t:.2f} | {m:.2f} | {tb:.3f} | {mb:.3f} | {ratio:.2f} |"
                + "".join(f" {x:.3f} |" for x in extra) + "\n")
# One data file per collective for gnuplot (a curve needs two sizes: barrier
# has one, and its time is in the table only).
for coll in sorted({k[0] for k in rows}):
    if sum(1 for row in table if row[0] == coll) < 2:
        continue
    with open(f"{base}.{coll}.dat", "w") as f:
        for c, size, algo, t, m, tb, mb, ratio, extra in table:
            if c == coll:
                f.write(f"{size} {tb} {mb}\n")
PY

colls=$(ls "$out/$name-$method".*.dat 2>/dev/null | sed "s|$out/$name-$method\.||; s|\.dat||")
n=$(echo "$colls" | wc -w)
if [ "$n" -gt 0 ]; then
rows_=$(( (n + 1) / 2 ))
{
  echo "set terminal pngcairo size 1200,$(( 330 * rows_ )) font ',9' noenhanced"
  echo "set output '$out/$name-$method.png'"
  echo "set multiplot layout $rows_,2 title 'tutti vs MPI, $name-$method (busbw, GB/s)'"
  echo "set logscale x 2; set format x '%.0s%cB'; set key top left; set grid"
  for c in $colls; do
    echo "set title '$c'"
    echo "plot '$out/$name-$method.$c.dat' using 1:2 with linespoints title 'tutti', '' using 1:3 with linespoints title 'MPI'"
  done
  echo "unset multiplot"
} | gnuplot
fi
rm -f "$out/$name-$method".*.dat
echo "compare-mpi: wrote $out/$name-$method.csv, $out/$name-$method.md, $out/$name-$method.png" >&2
done
