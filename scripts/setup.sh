#!/usr/bin/env bash
# Installs what tutti needs from Debian 12's packages (only what is missing),
# then configures and builds it in ./build. Safe to run again.
#   BUILD_DIR   build directory            (default: build)
#   MESON_ARGS  extra `meson setup` options (e.g. -Dcuda=disabled)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential pkg-config meson ninja-build openmpi-bin libopenmpi-dev
          libucx-dev ucx-utils catch2 libtomlplusplus-dev
          python3-torch libtorch-dev pybind11-dev)  # the last three: tutti_torch
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build=${BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  # CUDA is built when nvcc is found (/usr/local/cuda); nothing else needs it.
  PATH="$PATH:/usr/local/cuda/bin" meson setup "$build" ${MESON_ARGS:-}
fi
PATH="$PATH:/usr/local/cuda/bin" ninja -C "$build"
