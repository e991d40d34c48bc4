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
    mpirun -np "$np" $(oversubscribe_args "$np") --bind-to none -x TUTTI_TRANSPORT="$transport" \
      build/apps/tutti-bench --op all --algorithm "$name" --check --min-bytes 8 \
      --max-bytes "$max" --step-factor 8 --iters 3 --warmup 1 --format csv "$@" >"$log" 2>&1
    rc=$?
    # Every row must have run the forced algorithm (a refusal would fall
    # back silently to another), with no wrong element and no error.
    verdict=$(python3 - "$log" "$name" "$rc" <<'PY'
import csv, sys
text, name, rc = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
rows = [r for r in csv.DictReader(text[text.find("collective,"):].splitlines())
        if (r.get("bytes") or "").isdigit()]
problems = [f"{r['collective']} {r['bytes']} B: ran {r['algorithm']}" for r in rows if r["algorithm"] != name]
problems += [f"{r['collective']} {r['bytes']} B: {r['wrong']} wrong {r.get('error') or ''}".strip()
             for r in rows if r["wrong"] not in ("0", "") or (r.get("error") or "").strip()]
if rc != 0: problems.insert(0, f"tutti-bench exit {rc}")
if not rows: problems.insert(0, "no rows")
print(f"ok {len(rows)}" if not problems else "FAIL " + "; ".join(problems[:5]))
PY
)
    if [ "${verdict%% *}" = ok ]; then
      good=$((good + 1))
      echo "ok    $transport $name: ${verdict#ok } rows, each ran $name, 0 wrong"
    else
      bad=$((bad + 1))
      echo "FAIL  $transport $name: ${verdict#FAIL }"
      grep -E 'ERROR|FAILED' "$log" | head -3
    fi
    rm -f "$log"
  done
done
echo "$good passed, $bad failed"
[ "$bad" -eq 0 ]
