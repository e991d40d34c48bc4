#!/usr/bin/env bash
# tutti-tune end to end, on 2 and 3 ranks: tune a small size range, load the
# file back through tutti_comm_create (TUTTI_TUNING_FILE) and check that
# tutti picks, at every measured size, what the file's rule says
# (tutti-tune-check), that tutti-info --explain names the file's rule, and
# that the file's section (this job's shape) does not apply to another shape.
# Usage: tune_e2e.sh TUTTI_TUNE TUTTI_TUNE_CHECK TUTTI_INFO WORKDIR
set -euo pipefail
tune=$1 check=$2 info=$3 work=$4/tune-e2e
rm -rf "$work"
mkdir -p "$work"
mpirun=(mpirun --oversubscribe --bind-to none)
for np in 2 3; do
  file=$work/np$np.toml
  echo "== tutti-tune on $np ranks"
  "${mpirun[@]}" -np "$np" "$tune" --max-bytes 256K --step-factor 4 --iters 10 \
    --time-budget 120 --output "$file" --csv "$work/np$np.csv"
  grep -q '^\[tutti\]' "$file"
  grep -q "^ranks = \"$np\"" "$file"
  echo "== the file, loaded back on $np ranks"
  TUTTI_TUNING_FILE=$file "${mpirun[@]}" -np "$np" -x TUTTI_TUNING_FILE -x TUTTI_TIMEOUT \
    "$check" "$work/np$np.csv"
  echo "== tutti-info --explain"
  out=$(TUTTI_TUNING_FILE=$file "$info" --explain allreduce 4K "$np")
  echo "$out"
  echo "$out" | grep -Eq "^chosen: .*\(rule $file:[0-9]+\)"
  other=$((np == 2 ? 3 : 2))
  out=$(TUTTI_TUNING_FILE=$file "$info" --explain allreduce 4K "$other")
  echo "$out" | grep -q "0 of [0-9]* rules for this job"
  echo "$out" | grep -Eq "^chosen: .*\(rule built-in\)"
done
echo "tutti-tune end to end: OK"
