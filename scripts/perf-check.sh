#!/usr/bin/env bash
# A cheap performance regression check, separate from the correctness tests
# (CI runs it last): at a few sizes, tutti-bench --compare-mpi times tutti
# and the MPI library's own collective interleaved in one job, RUNS times;
# a case fails when the median over runs of tutti's time / MPI's time exceeds
# its limit. The limits are generous (this machine's speed changes every few
# minutes and small timings are noisy): they catch a lost fast path or an
# algorithm gone quadratic, not a few percent.
#   NP=2 RUNS=3 ITERS=100 ATTEMPTS=3 ./scripts/perf-check.sh
# Ends with "N passed, N failed" like scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
. scripts/mpi-env.sh
np=${NP:-2} runs=${RUNS:-3} iters=${ITERS:-100} attempts=${ATTEMPTS:-3}
# collective  size  limit (tutti time / MPI time)
cases=(
  "allreduce       8     2.0"
  "allreduce       16K   1.5"
  "allreduce       1M    1.5"
  "allreduce       32M   1.5"
  "allgather       64K   1.5"
  "reduce_scatter  1M    1.5"
  "bcast           1M    1.5"
  "alltoall        64K   1.5"
  "barrier         0     2.0"
)
oversubscribe=()
[ "$np" -le "$(nproc)" ] || oversubscribe=(--oversubscribe)
to_bytes() {  # 16K -> 16384
  local v=$1
  case $v in
    *K) echo $(( ${v%K} << 10 )) ;;
    *M) echo $(( ${v%M} << 20 )) ;;
    *) echo "$v" ;;
  esac
}
# The median tutti/MPI ratio of `runs` jobs for one case, as
# "ratio algorithm tutti_us mpi_us" (empty if nothing was measured).
measure() {
  local coll=$1 bytes=$2 ratios=() row ratio
  for run in $(seq 1 "$runs"); do
    # The size and the one below it, as in a sweep: a lone first size of
    # 1 MiB measured 2-3x slower for both tutti and MPI here (fresh
    # allocations), which would test the allocator rather than tutti.
    row=$(mpirun -np "$np" "${oversubscribe[@]}" --bind-to none build/apps/tutti-bench \
            --op "$coll" --compare-mpi --format csv --min-bytes $(( bytes > 16 ? bytes / 2 : 8 )) \
            --max-bytes $(( bytes > 8 ? bytes : 8 )) --iters "$iters" --warmup 10 2>/dev/null | tail -1)
    # columns: ...,7 algorithm,8 time_us,...,12 mpi_time_us
    ratio=$(awk -F, '$8 > 0 && $12 > 0 { printf "%.3f %s %.2f %.2f", $8 / $12, $7, $8, $12 }' <<<"$row")
    [ -n "$ratio" ] && ratios+=("$ratio")
  done
  [ ${#ratios[@]} -gt 0 ] || return 0
  printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }'
}

# A case that exceeds its limit is measured again, up to `attempts` times in
# all, and fails only if every attempt does. Why: the two vCPUs of these VMs
# change placement on the host from one job to the next, and in the slowest
# placement copying data that the other core just wrote (what the
# shared-memory algorithms do) takes 3-6x longer for several jobs in a row,
# while MPI, timed on input that never changes, keeps it in its own cache.
# A real regression fails every attempt.
passed=0 failed=0
for c in "${cases[@]}"; do
  read -r coll size limit <<<"$c"
  bytes=$(to_bytes "$size")
  line="" ok=0
  for attempt in $(seq 1 "$attempts"); do
    median=$(measure "$coll" "$bytes")
    if [ -z "$median" ]; then line="$coll $size: no measurement"; continue; fi
    read -r ratio algo t_us mpi_us <<<"$median"
    line=$(printf '%-15s %5s  %-20s tutti %9.2f us  MPI %9.2f us  ratio %.2f (limit %s)' \
             "$coll" "$size" "$algo" "$t_us" "$mpi_us" "$ratio" "$limit")
    [ "$attempt" -gt 1 ] && line="$line, attempt $attempt"
    if awk -v r="$ratio" -v l="$limit" 'BEGIN { exit !(r <= l) }'; then ok=1; break; fi
    echo "      over the limit: $line"
  done
  if [ "$ok" -eq 1 ]; then
    passed=$((passed + 1)); echo "ok    $line"
  else
    failed=$((failed + 1)); echo "FAIL  $line"
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
