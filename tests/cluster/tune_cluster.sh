#!/usr/bin/env bash
# tutti-tune on the emulated cluster, 2 nodes x 2 ranks: tune a small size
# range there, load the file back on the same cluster through
# tutti_comm_create (TUTTI_TUNING_FILE) and check that tutti picks, at every
# measured size, what the file's rule says (tutti-tune-check); that the
# file's section names the job's shape (4 ranks, 2 nodes, 2 per node); that
# tutti-info --explain --nodes 2 names the file's rule, and that the section
# does not apply to 4 ranks on one node.
# Usage: tune_cluster.sh CLUSTER_SH TUTTI_TUNE TUTTI_TUNE_CHECK TUTTI_INFO WORKDIR
# Exits 77 (skipped) where the cluster cannot be emulated (cluster.sh).
set -uo pipefail
cluster=$1 tune=$2 check=$3 info=$4 work=$5/tune-cluster
rm -rf "$work"
mkdir -p "$work"
file=$work/2x2.toml
echo "== tutti-tune on 2 x 2"
"$cluster" run 2x2 --timeout 200 -- -x TUTTI_TIMEOUT "$tune" --max-bytes 64K --step-factor 8 \
  --iters 5 --time-budget 120 --output "$file" --csv "$work/2x2.csv"
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"  # 77 where the cluster cannot be emulated
set -e
grep -q '^ranks = "4"$' "$file"
grep -q '^nodes = "2"$' "$file"
grep -q '^ppn = "2"$' "$file"
echo "== the file, loaded back on 2 x 2"
"$cluster" run 2x2 --timeout 200 -- -x TUTTI_TUNING_FILE="$file" -x TUTTI_TIMEOUT \
  "$check" "$work/2x2.csv"
echo "== tutti-info --explain"
out=$(TUTTI_TUNING_FILE=$file "$info" --explain allreduce 4K 4 --nodes 2)
echo "$out"
echo "$out" | grep -Eq "^chosen: .*\(rule $file:[0-9]+\)"
out=$(TUTTI_TUNING_FILE=$file "$info" --explain allreduce 4K 4 --nodes 1)
echo "$out" | grep -q "0 of [0-9]* rules for this job"
echo "$out" | grep -Eq "^chosen: .*\(rule built-in\)"
echo "tutti-tune on the emulated cluster: OK"
