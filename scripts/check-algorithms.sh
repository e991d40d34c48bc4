#!/usr/bin/env bash
# Forces every algorithm in turn (tutti-bench --algorithm NAME --op all: every
# collective that has an algorithm of that name) on both transports and
# checks every result on random data. Prints one line per (transport,
# algorithm) and a summary; exit 1 if anything was wrong or failed.
#   NP         ranks (default 4, oversubscribed on small machines)
#   MAX_BYTES  largest message (default 4M)
#   further arguments go to tutti-bench
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null || exit 1
. scripts/mpi-env.sh
np=${NP:-4}
max=${MAX_BYTES:-4M}
# Algorithm names, from tutti-info's listing (indented "  name  [params] ...").
mapfile -t names < <(build/apps/tutti-info | awk '/^algorithms/ {on=1; next}
  on && /^    [a-z_]+ / {print $1}' | sort -u)
bad=0 good=0
for transport in ucx mpi; do
  for name in "${names[@]}"; do
    log=$(mktemp)
    if mpirun -np "$np" --oversubscribe --bind-to none -x TUTTI_TRANSPORT="$transport" \
         build/apps/tutti-bench --op all --algorithm "$name" --check --min-bytes 8 \
         --max-bytes "$max" --step-factor 8 --iters 3 --warmup 1 "$@" >"$log" 2>&1; then
      good=$((good + 1))
      echo "ok    $transport $name: $(grep -c '^ *[0-9]' "$log") rows, 0 wrong"
    else
      bad=$((bad + 1))
      echo "FAIL  $transport $name:"; grep -E 'ERROR|FAILED|wrong' "$log" | head -5
    fi
    rm -f "$log"
  done
done
echo "$good passed, $bad failed"
[ "$bad" -eq 0 ]
