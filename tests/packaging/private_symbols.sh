#!/usr/bin/env bash
# libtutti.so exports tutti's symbols only: the static CUDA runtime linked
# into it (and any other static library) stays private, so that it cannot
# interpose on an application's own CUDA runtime (PyTorch loads its own
# libcudart, possibly of another version).
#   private_symbols.sh LIBTUTTI_SO
set -euo pipefail
lib=$1
exported=$(nm -D --defined-only "$lib" | awk '{print $3}')
leaked=$(grep -E '^(cuda|cu[A-Z]|__cuda|__fatbinwrap|nvrtc)' <<<"$exported" || true)
if [ -n "$leaked" ]; then
  echo "FAIL: $lib exports CUDA runtime symbols:"
  head -20 <<<"$leaked"
  exit 1
fi
echo "OK: $(wc -l <<<"$exported") exported symbols, none of the CUDA runtime"
