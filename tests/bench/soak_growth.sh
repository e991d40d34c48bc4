#!/usr/bin/env bash
# The soak's memory check can fail: a soak that leaks 64 KiB per call in its
# second half (--soak-leak, 150 calls: 9.4 MiB) must fail on growth, and the
# same soak without the leak must pass.
#   soak_growth.sh TUTTI_BENCH
set -uo pipefail
bench=$1
run() { mpirun -np 2 --oversubscribe --bind-to none "$bench" --soak 300 --seed 5 "$@" 2>&1; }
clean=$(run); clean_rc=$?
leaky=$(run --soak-leak 64); leaky_rc=$?
echo "$clean" | grep '^#' | tail -2
echo "$leaky" | grep '^#' | tail -3
fail=0
[ "$clean_rc" -eq 0 ] || { echo "FAIL: the soak without a leak failed (exit $clean_rc)"; fail=1; }
[ "$leaky_rc" -ne 0 ] || { echo "FAIL: the leaking soak passed"; fail=1; }
grep -q 'memory grew by' <<<"$leaky" || { echo "FAIL: the leaking soak does not report growth"; fail=1; }
[ "$fail" -eq 0 ] && echo "OK: growth fails the soak"
exit "$fail"
