#!/usr/bin/env bash
# Where a small device allreduce's time goes when ranks share one GPU: 1 rank
# against 2, the shared-segment, ring and MPI paths, then the same with the
# CUDA MPS daemon (which lets the ranks' kernels and copies run side by side
# instead of time-slicing the GPU between their contexts).
#
#   scripts/gpu-check.sh exec .gpu scripts/gpu-probe-sharing.sh [BIN_DIR]
#
# BIN_DIR holds tutti-bench (default .gpu/bin). Needs about 40 s.
set -u
bench=${1:-.gpu/bin}/tutti-bench
args=(--op allreduce --memory cuda --min-bytes 8 --max-bytes 1M --step-factor 16 --iters 50)
mpirun=(timeout 40 mpirun --bind-to none --oversubscribe)
echo "## np1 cuda"; "${mpirun[@]}" -np 1 "$bench" "${args[@]}"
echo "## np1 host"; "${mpirun[@]}" -np 1 "$bench" "${args[@]}" --memory host
echo "## np2 cuda shm"; "${mpirun[@]}" -np 2 "$bench" "${args[@]}"
echo "## np2 cuda ring"; "${mpirun[@]}" -np 2 "$bench" "${args[@]}" --algorithm ring
echo "## np2 cuda mpi"; "${mpirun[@]}" -np 2 "$bench" "${args[@]}" --algorithm mpi
if nvidia-cuda-mps-control -d; then
  echo "## np2 cuda shm MPS"; "${mpirun[@]}" -np 2 "$bench" "${args[@]}"
  echo "## np2 cuda ring MPS"; "${mpirun[@]}" -np 2 "$bench" "${args[@]}" --algorithm ring
  echo quit | nvidia-cuda-mps-control
else
  echo "## no MPS daemon could be started"
fi
