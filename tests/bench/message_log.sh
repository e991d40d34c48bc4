#!/usr/bin/env bash
# TUTTI_MESSAGE_LOG writes one file per process, in which every message a
# collective posted (send or receive) completes; without it, nothing is
# written.
#   message_log.sh TUTTI_BENCH
set -uo pipefail
bench=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() {
  mpirun -np 2 --oversubscribe --bind-to none -x TUTTI_TRANSPORT=ucx "$@" "$bench" --op allreduce \
    --algorithm ring --min-bytes 65536 --max-bytes 65536 --iters 3 --check > "$dir/out" 2>&1
}
fail=0
run -x TUTTI_MESSAGE_LOG="$dir/log" || { cat "$dir/out"; echo "FAIL: tutti-bench failed"; fail=1; }
files=("$dir"/log.*)
[ "${#files[@]}" -eq 2 ] && [ -f "${files[0]}" ] || { echo "FAIL: expected 2 logs, got: ${files[*]}"; fail=1; }
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  posted=$(grep -cE '^[0-9]+ (SEND|RECV) .*tag=call #' "$f")
  # The completion of each posted collective message, by its completion's address.
  done_ok=$(awk '$2=="SEND"||$2=="RECV" { if ($0 ~ /tag=call #/) { split($4, c, "="); open[c[2]]=1 } }
                 $2=="DONE" && $4=="status=Success" { split($3, c, "="); if (c[2] in open) { n++; delete open[c[2]] } }
                 END { print n+0 }' "$f")
  echo "$(basename "$f"): $posted collective messages posted, $done_ok completed"
  [ "$posted" -gt 0 ] && [ "$done_ok" -eq "$posted" ] || { echo "FAIL: $f"; head -5 "$f"; fail=1; }
done
rm -f "$dir"/log.*
run || { echo "FAIL: tutti-bench failed without the log"; fail=1; }
[ -z "$(ls "$dir" | grep '^log\.')" ] || { echo "FAIL: logs written without TUTTI_MESSAGE_LOG"; fail=1; }
[ "$fail" -eq 0 ] && echo "OK: the message log records every message"
exit "$fail"
