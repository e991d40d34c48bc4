#!/usr/bin/env bash
# tutti-tune --calibrate on 2 ranks of one node: writes a machine
# description that tutti-sim and the dispatcher load, with the [intra] link
# and the compute figures measured (positive, and not the defaults; the
# node's CPUs; the cache edge and the rates below it where one is seen; the
# segment's flag, peer-read and direct-call costs) and
# [inter] marked as not measured; the two rendezvous lines (the first where
# the eager limit leaves sizes below 256 KiB).
# Usage: calibrate.sh TUTTI_TUNE TUTTI_SIM
set -euo pipefail
tune=$1 sim=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
file=$dir/machine.toml
mpirun -np 2 --bind-to none "$tune" --calibrate "$file"
cat "$file"
failures=0
expect() {
  if eval "$1"; then echo "ok: $2"; else echo "FAILED: $2"; failures=$((failures + 1)); fi
}
value() { awk -v s="[$1]" -v k="$2" '$1 ~ /^\[/ {in_s = ($1 == s)} in_s && $1 == k {print $3}' "$file"; }
# expect_number SECTION.KEY '>' | '>=' WHAT: the key is there and its value
# compares so with 0.
expect_number() {
  local v
  v=$(value "${1%%.*}" "${1#*.}")
  expect "awk -v v='$v' 'BEGIN {exit !(v != \"\" && v + 0 $2 0)}'" "$1 = $v, $3"
}
for key in intra.alpha_us intra.beta_gbps compute.reduce_gbps compute.copy_gbps; do
  expect_number "$key" '>' "measured and positive"
done
expect_number intra.inject_us '>=' "measured"
# The rendezvous lines, both measured, and the ladder behind the eager
# limit in the file. The first line runs from the first size above the
# eager limit (twice it) to 256 KiB: where the ladder's jump puts the limit
# at 128 KiB or more there is no size between, and no first line (seen
# once in 2026-12-06's CI: the limit at 128 KiB).
eager=$(value intra eager_bytes)
if [ -n "$eager" ] && [ "$eager" -ge 131072 ]; then
  expect "[ -z '$(value intra rndv_short_beta_gbps)$(value intra rndv_short_alpha_us)' ]" \
    "no intra.rndv_short_* line: eager_bytes = $eager leaves no size below 256 KiB"
else
  expect_number intra.rndv_short_beta_gbps '>' "measured"
  expect_number intra.rndv_short_alpha_us '>=' "measured"
fi
# Whether the short line starts below the large one is the machine's, not
# the code's: the large line's start is extrapolated from 256 KiB-4 MiB
# times, a small difference of large ones. 2026-11-27's VM: 6-11 us against
# 25-28; 2026-11-28's, run to run (the code of d4ac6af too): 12.6 against
# 5.9, 5.4 against 3.0, 5.1 against 11.2. Said, not checked.
echo "note: intra.rndv_short_alpha_us = $(value intra rndv_short_alpha_us), intra.rndv_alpha_us = $(value intra rndv_alpha_us)"
expect "grep -q '^# (half round trips: 4 KiB' '$file'" "the eager ladder's half round trips are in the file"
cores=$(value compute cores_per_node)
expect "[ '$cores' = $(nproc) ]" "compute.cores_per_node = $cores, the CPUs the ranks may run on ($(nproc))"
expect_number compute.cache_bytes '>=' "measured"
cache=$(value compute cache_bytes)
if [ -n "$cache" ] && [ "$cache" != 0 ]; then
  for key in compute.reduce_cached_gbps compute.copy_cached_gbps; do
    expect_number "$key" '>' "measured below the cache edge"
  done
fi
expect_number intra.flag_us '>' "measured (ranks 0 and 1 share the node)"
expect_number intra.peer_copy_gbps '>' "measured (ranks 0 and 1 share the node)"
expect_number protocol.direct_call_us '>=' "measured"
expect "grep -Eq '^peer_read_us = ([0-9.]*[1-9][0-9.]*\$|0.000  # not measured)' '$file'" \
  "intra.peer_read_us measured, or said not to be (no cross-memory attach here)"
expect "grep -Eq '^peer_read_us = 0.000  # not measured' '$file' || grep -Eq '^peer_read_gbps = [0-9.]*[1-9]' '$file'" \
  "intra.peer_read_gbps measured where reads are"
expect_number protocol.call_us '>=' "measured"
# Measured, so not the built-in defaults (intra 0.5 us and 5 GB/s): not
# both (a measured slope here is 4.8-6.2 GB/s, and once printed 5.000).
expect "[ \"$(value intra alpha_us) $(value intra beta_gbps)\" != '0.500 5.000' ]" \
  "intra.alpha_us and beta_gbps are not both the defaults"
expect "grep -q '^\[inter\]  # not measured' '$file'" "[inter] says it was not measured (one node)"
expect "'$sim' --machine '$file' --collectives allreduce --ranks 64 --max-bytes 1M --csv > '$dir/sim.csv'" \
  "tutti-sim loads it"
expect "[ \$(grep -c ',1\$' '$dir/sim.csv') -ge 5 ]" "tutti-sim predicts and chooses with it"
TUTTI_MACHINE=$file mpirun -np 2 --bind-to none "$tune" --calibrate "$dir/again.toml" > /dev/null
expect "true" "a job runs with TUTTI_MACHINE set to it"
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
