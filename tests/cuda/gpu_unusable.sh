#!/usr/bin/env bash
# The GPU tests must fail, not skip, where nvidia-smi lists a GPU but the CUDA
# runtime sees none (a driver older than the toolkit looks like this). Made
# so on any machine: CUDA_VISIBLE_DEVICES hides the GPUs from the runtime, and
# where nvidia-smi lists none, a stand-in nvidia-smi lists one.
#   gpu_unusable.sh TUTTI_CUDA_TESTS
set -uo pipefail
exe=$1
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  printf '#!/bin/sh\necho "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-stand-in)"\n' >"$fake/nvidia-smi"
  chmod +x "$fake/nvidia-smi"
fi
out=$(PATH="$fake:$PATH" CUDA_VISIBLE_DEVICES= mpirun -np 2 --oversubscribe --bind-to none "$exe" 2>&1)
rc=$?
echo "$out" | grep -v '^$' | head -20
echo "exit code: $rc"
if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]; then
  echo "FAIL: a listed but unusable GPU must fail the GPU tests (exit $rc)"
  exit 1
fi
grep -q 'nvidia-smi lists a GPU' <<<"$out" || { echo "FAIL: the failure does not say why"; exit 1; }
echo "OK: failed loudly"
