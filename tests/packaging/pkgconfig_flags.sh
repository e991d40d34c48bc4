#!/usr/bin/env bash
# tutti.pc hands users only what compiling against tutti.h needs: its own
# include directory and MPI's. Private dependencies (toml++, UCX, CUDA) must
# not reach users' compile flags (toml++'s -DTOML_SHARED_LIB=1 would change
# how a user's own toml++ builds).
#   pkgconfig_flags.sh BUILD_DIR
set -euo pipefail
build=$1
export PKG_CONFIG_PATH=$build/meson-private
cflags=$(pkg-config --cflags tutti)
libs=$(pkg-config --libs tutti)
echo "cflags: $cflags"
echo "libs:   $libs"
fail=0
for bad in -DTOML TOML_ toml cuda; do
  if grep -qi -- "$bad" <<<"$cflags"; then echo "FAIL: '$bad' in pkg-config --cflags tutti"; fail=1; fi
done
requires=$(sed -n 's/^Requires: *//p' "$build/meson-private/tutti.pc")
[ -n "$requires" ] || { echo "FAIL: tutti.pc requires no MPI package"; fail=1; }
mpi_inc=$([ -z "$requires" ] || pkg-config --cflags-only-I $requires)
for flag in $mpi_inc; do
  grep -q -- "$flag" <<<"$cflags" || { echo "FAIL: MPI's $flag missing from the cflags"; fail=1; }
done
grep -q -- '-ltutti' <<<"$libs" || { echo "FAIL: -ltutti missing from pkg-config --libs tutti"; fail=1; }
[ "$fail" -eq 0 ] && echo "pkg-config flags OK"
exit "$fail"
