#!/usr/bin/env bash
# tutti-bench --bounds on 1, 2 and 3 ranks: every row carries a positive
# concurrent-copy time and a fraction of bound derived from it; the
# cache-line round trip and the exchange (up to 4 KiB) are measured
# (positive) wherever ranks 0 and 1 exist and reported as 0 on one rank; a
# size above 4 KiB has no exchange (0). CSV, table and JSON all carry the
# columns.
# Usage: bounds.sh TUTTI_BENCH
set -euo pipefail
bench=$1
mpirun=(mpirun --oversubscribe --bind-to none)
for np in 1 2 3; do
  echo "== $np ranks"
  csv=$("${mpirun[@]}" -np "$np" "$bench" --op allreduce --bounds --format csv \
          --min-bytes 8 --max-bytes 64K --step-factor 8 --iters 5 --warmup 1)
  echo "$csv"
  header=$(head -1 <<<"$csv")
  [[ $header == *",copy_us,of_bound,rtt_us,exchange_us,error" ]] || { echo "bad header: $header"; exit 1; }
  # columns: 2 bytes, 8 time_us, 12 copy_us, 13 of_bound, 14 rtt_us, 15 exchange_us
  tail -n +2 <<<"$csv" | awk -F, -v np="$np" '
    { rows++ }
    !($8 > 0 && $12 > 0 && $13 > 0) { print "row without a copy bound: " $0; bad = 1 }
    np > 1 && !($14 > 0) { print "row without a round trip: " $0; bad = 1 }
    np == 1 && $14 != 0 { print "a round trip on one rank: " $0; bad = 1 }
    np > 1 && $2 <= 4096 && !($15 > 0) { print "row without an exchange: " $0; bad = 1 }
    (np == 1 || $2 > 4096) && $15 != 0 { print "an exchange where none is measured: " $0; bad = 1 }
    END { if (rows < 5) { print "only " rows " rows"; bad = 1 } exit bad }'
done
# Captured first: grep -q on a pipe would stop reading at its match and
# leave mpirun to die of SIGPIPE (exit 141 under pipefail).
table=$("${mpirun[@]}" -np 2 "$bench" --bounds --max-bytes 64 --iters 2)
grep -q "xchg(us)" <<<"$table"
json=$("${mpirun[@]}" -np 2 "$bench" --bounds --max-bytes 64 --iters 2 --format json)
grep -q '"exchange_us": ' <<<"$json"
echo "bounds: ok"
