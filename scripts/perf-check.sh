#!/usr/bin/env bash
# A cheap performance regression check, separate from the correctness tests
# (CI runs it last): at a few sizes, tutti-bench --compare-mpi times tutti
# and the MPI library's own collective interleaved in one job, RUNS times;
# a case fails when the median over runs of tutti's time / MPI's time exceeds
# its limit, or when any run fails (a non-zero exit, an error cell, a wrong
# result). Each case's limit comes from its own recorded ratio: 2.5 times
# the ratio measured when the case was last recorded, capped at 1.2 (never
# more than 20% behind MPI), so losing a fast path that runs at 0.1-0.5x of
# MPI's time fails too. 2.5x, not 2x: with the two cores far apart (a speed
# state these machines fall into for minutes at a time) tutti's shared-memory
# copies slow more than MPI's, up to about twice the recorded ratio. Re-record (and say so in docs/PERFORMANCE.md) when a change
# makes a case faster or slower on purpose.
#   NP=2 RUNS=3 ITERS=100 ATTEMPTS=4 PAUSE=45 ./scripts/perf-check.sh
# Ends with "N passed, N failed" like scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
. scripts/mpi-env.sh
np=${NP:-2} runs=${RUNS:-3} iters=${ITERS:-100} attempts=${ATTEMPTS:-4} pause=${PAUSE:-45}
# collective  size  recorded ratio (tutti time / MPI time, 2 ranks: the
# highest median of 3 runs of this script on 2026-11-25, cores close, Open
# MPI without yield_when_idle; limit = min(2.5 x ratio, 1.2)), timed with a
# barrier before each call, then back to back (tutti-bench --back-to-back)
cases=(
  "allreduce       8     0.70  0.60"
  "allreduce       16K   0.42  0.31"
  "allreduce       1M    0.84  0.88"
  "allreduce       32M   0.40  0.34"
  "allgather       64K   0.72  0.70"
  "reduce_scatter  1M    0.12  0.08"
  "bcast           1M    0.60  0.45"
  "alltoall        64K   0.72  0.75"
  "barrier         0     0.86  0.91"
)
limit_of() { awk -v r="$1" 'BEGIN { l = 2.5 * r; if (l > 1.2) l = 1.2; printf "%.2f", l }'; }
read -ra launch <<<"$(oversubscribe_args "$np")"
to_bytes() {  # 16K -> 16384
  local v=$1
  case $v in
    *K) echo $(( ${v%K} << 10 )) ;;
    *M) echo $(( ${v%M} << 20 )) ;;
    *) echo "$v" ;;
  esac
}
# The median tutti/MPI ratio of `runs` jobs for one case, as
# "ratio algorithm tutti_us mpi_us", or "error WHY" when a run failed.
measure() {
  local coll=$1 bytes=$2 method=$3 ratios=() out rc ratio method_args=()
  [ "$method" = back-to-back ] && method_args=(--back-to-back)
  for run in $(seq 1 "$runs"); do
    # The size and the one below it, as in a sweep: a lone first size of
    # 1 MiB measured 2-3x slower for both tutti and MPI here (fresh
    # allocations), which would test the allocator rather than tutti.
    out=$(mpirun -np "$np" "${launch[@]}" --bind-to none build/apps/tutti-bench \
            --op "$coll" --compare-mpi --format csv --min-bytes $(( bytes > 16 ? bytes / 2 : 8 )) \
            --max-bytes $(( bytes > 8 ? bytes : 8 )) --iters "$iters" --warmup 10 \
            "${method_args[@]}" 2>&1)
    rc=$?
    ratio=$(python3 -c '
import csv, io, sys
rc, text = int(sys.argv[1]), sys.argv[2]
rows = [r for r in csv.DictReader(io.StringIO(text[text.find("collective,"):]))
        if r.get("collective") and r.get("bytes", "").isdigit()]
bad = [r for r in rows if (r.get("error") or "").strip() or (r.get("wrong") or "0") not in ("0", "-1", "")]  # -1: not checked
if rc != 0 or not rows or bad:
    why = bad[0].get("error") or "wrong results" if bad else f"tutti-bench exit {rc}" if rc else "no rows"
    print("error", " ".join(why.split())[:200]); sys.exit()
r = rows[-1]
t, m, algorithm = float(r["time_us"]), float(r["mpi_time_us"]), r["algorithm"]
print(f"{t / m:.3f} {algorithm} {t:.2f} {m:.2f}" if t > 0 and m > 0 else "error zero time")
' "$rc" "$out")
    # Anything but "RATIO ALGORITHM T M" (a failure of this parser too) fails.
    [[ "$ratio" =~ ^[0-9.]+\ [a-z_]+\ [0-9.]+\ [0-9.]+$ ]] || ratio="error ${ratio:-no result}"
    if [ "${ratio%% *}" = error ]; then echo "$ratio"; return 0; fi
    ratios+=("$ratio")
  done
  printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }'
}

# A case that exceeds its limit is measured again, up to `attempts` times in
# all, and fails only if every attempt does. Why: the two vCPUs of these VMs
# change placement on the host from one job to the next, and in the slowest
# placement copying data that the other core just wrote (what the
# shared-memory algorithms do) takes 3-6x longer for several jobs in a row,
# while MPI, timed on input that never changes, keeps it in its own cache.
# That state lasts minutes, so a failed attempt waits PAUSE seconds before
# the next. A real regression fails every attempt.
passed=0 failed=0
for c in "${cases[@]}"; do
  read -r coll size recorded_barrier recorded_b2b <<<"$c"
  for method in barrier back-to-back; do
  recorded=$recorded_barrier
  [ "$method" = back-to-back ] && recorded=$recorded_b2b
  limit=$(limit_of "$recorded")
  bytes=$(to_bytes "$size")
  line="" ok=0
  for attempt in $(seq 1 "$attempts"); do
    median=$(measure "$coll" "$bytes" "$method")
    if [ "${median%% *}" = error ]; then line="$coll $size $method: ${median#error }"; break; fi
    read -r ratio algo t_us mpi_us <<<"$median"
    line=$(printf '%-15s %5s %-12s %-18s tutti %9.2f us  MPI %9.2f us  ratio %.2f (recorded %s, limit %s)' \
             "$coll" "$size" "$method" "$algo" "$t_us" "$mpi_us" "$ratio" "$recorded" "$limit")
    [ "$attempt" -gt 1 ] && line="$line, attempt $attempt"
    if awk -v r="$ratio" -v l="$limit" 'BEGIN { exit !(r <= l) }'; then ok=1; break; fi
    echo "      over the limit: $line"
    [ "$attempt" -lt "$attempts" ] && sleep "$pause"
  done
  if [ "$ok" -eq 1 ]; then
    passed=$((passed + 1)); echo "ok    $line"
  else
    failed=$((failed + 1)); echo "FAIL  $line"
  fi
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
