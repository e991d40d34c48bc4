#!/usr/bin/env bash
# Which pipeline chunk suits a staged device ring allreduce (issue #21,
# "larger chunks for device buffers"): 2 ranks on one GPU under the CUDA MPS
# daemon (the setup docs/CUDA.md recommends for ranks sharing a GPU), the
# ring forced through TUTTI_TUNE with chunk_bytes 256K (the default), 1M, 4M
# and 16M, 1 MiB - 256 MiB, checked. Two rounds, interleaved, so that a
# change of the machine's speed state shows as a difference between rounds.
#
#   scripts/gpu-check.sh exec .gpu scripts/gpu-probe-chunks.sh [BIN_DIR]
#
# Needs about 2 minutes.
set -u
bench=${1:-.gpu/bin}/tutti-bench
args=(--op allreduce --memory cuda --min-bytes 1M --max-bytes 256M --step-factor 4 --iters 10 --check)
mpirun=(timeout 60 mpirun --bind-to none --oversubscribe -np 2)
if ! nvidia-cuda-mps-control -d; then echo "## no MPS daemon could be started"; exit 1; fi
for round in 1 2; do
  for chunk in 256K 1M 4M 16M; do
    echo "## round $round chunk_bytes=$chunk"
    "${mpirun[@]}" -x TUTTI_TUNE="allreduce:0-:ring@chunk_bytes=$chunk" "$bench" "${args[@]}"
  done
done
echo quit | nvidia-cuda-mps-control
