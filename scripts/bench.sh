#!/usr/bin/env bash
# The main job: set up, build, then run tutti-bench on every collective with
# result checking under mpirun on this machine (embedded default tuning).
#   NP      ranks (default: 2)
#   further arguments go to tutti-bench (e.g. --op allreduce --compare-mpi)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
. scripts/mpi-env.sh
np=${NP:-2}
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--op all --check --max-bytes 16M --compare-mpi)
exec mpirun -np "$np" $(oversubscribe_args "$np") --bind-to none build/apps/tutti-bench "${args[@]}"
