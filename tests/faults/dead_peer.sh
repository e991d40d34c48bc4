#!/usr/bin/env bash
# A rank killed with SIGKILL mid-allreduce (tests/faults/dead_peer.cpp): every
# survivor must return an error within TUTTI_TIMEOUT (plus slack), on both
# transports. mpirun --enable-recovery keeps the survivors running.
# UCX runs with TUTTI_UCX_PEER_ERRORS=1: without peer error handling, UCX
# 1.13's CMA transport aborts a survivor whose single-copy read from the dead
# rank fails (ucs_fatal in uct_cma_ep_tx; seen in about 1 run in 3).
# Usage: dead_peer.sh DEAD_PEER_BINARY
set -uo pipefail
bin=$1
timeout_s=5
failures=0
for transport in ucx mpi; do
  for np in 2 3; do
    out=$(timeout 120 mpirun -np "$np" --oversubscribe --bind-to none --enable-recovery \
      -x TUTTI_TRANSPORT="$transport" -x TUTTI_TIMEOUT="$timeout_s" \
      -x TUTTI_UCX_PEER_ERRORS=$([ "$transport" = ucx ] && echo 1 || echo 0) "$bin" 2>&1)
    survivors=$(echo "$out" | grep -c '^survivor [0-9]*: ')
    # Every survivor failed (no success, no wrong result) within the bound.
    slow=$(echo "$out" | awk -v limit=$((timeout_s + 10)) \
      '/^survivor [0-9]*: / { for (i = 1; i <= NF; i++) if ($i == "after") if ($(i + 1) > limit) print }' | wc -l)
    if [ "$survivors" -eq $((np - 1)) ] && [ "$slow" -eq 0 ] &&
       ! echo "$out" | grep -q '^survivor [0-9]*: \(success\|wrong\)'; then
      echo "ok   $transport np=$np:"; echo "$out" | grep '^survivor' | sed 's/^/       /'
    else
      echo "FAIL $transport np=$np ($survivors survivors reported, $slow too slow):"
      echo "$out" | tail -20 | sed 's/^/       /'
      failures=$((failures + 1))
    fi
  done
done
[ "$failures" -eq 0 ]
