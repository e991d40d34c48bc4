#!/usr/bin/env bash
# CUDA IPC against staging, and the kernels under compute-sanitizer: the two
# checks of scripts/gpu-check.sh that failed on 2026-11-28 for reasons of the
# check itself, rerun alone.
#  - A device allreduce that sends messages between the ranks of one node:
#    the ring, forced (on one node the dispatcher picks shm, which copies
#    through host memory and sends no message, so IPC never runs there).
#    TUTTI_CUDA_IPC=0 then 1, same job shape, 2 ranks on one GPU, checked;
#    the IPC run must count offers.
#    Both ranks' output is kept, and the flight recorder's last operations
#    of each rank are printed (a timeout writes them).
#  - compute-sanitizer memcheck over the [kernels] tests, with the time the
#    full check could not give it.
#
#   scripts/gpu-check.sh exec .gpu scripts/gpu-probe-ipc.sh [BIN_DIR]
#
# Needs about 3 minutes.
set -u
bin=${1:-.gpu/bin}
args=(--op allreduce --memory cuda --min-bytes 8 --max-bytes 128M --step-factor 8 --iters 20 --check)
failed=0
for ipc in 0 1; do
  echo "## ring allreduce, device buffers, TUTTI_CUDA_IPC=$ipc"
  timeout 90 mpirun --bind-to none --oversubscribe -np 2 -x TUTTI_CUDA_IPC=$ipc \
    -x TUTTI_DEBUG=transport -x TUTTI_TUNE='allreduce:0-:ring' -x TUTTI_TIMEOUT=20 \
    -x TUTTI_TRACE=/tmp/ipc$ipc-trace \
    "$bin/tutti-bench" "${args[@]}" 2>&1 | tee /tmp/ipc$ipc.log
  rc=${PIPESTATUS[0]}
  echo "## rc=$rc"
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
done
# Where each rank stood (the flight recorder, written on a timeout): the
# last operations of every rank, RUNNING for one not finished.
for f in /tmp/ipc1-trace.rank*; do
  [ -e "$f" ] && { echo "## $f"; tail -4 "$f"; }
done
if grep -qE "CUDA IPC: [1-9][0-9]* messages sent as offers" /tmp/ipc1.log; then
  echo "## PASS ipc: offers sent"
else echo "## FAIL ipc: no offers sent"; failed=$((failed + 1)); fi
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
echo "## memcheck: $sanitizer"
start=$(date +%s)
timeout 170 "$sanitizer" --tool memcheck --error-exitcode 1 "$bin/tutti-cuda-tests" "[kernels]" 2>&1 | tail -15
rc=${PIPESTATUS[0]}
echo "## memcheck rc=$rc in $(( $(date +%s) - start )) s"
[ "$rc" -eq 0 ] || failed=$((failed + 1))
echo "## $failed failed"
exit "$failed"
