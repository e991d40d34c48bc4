#!/usr/bin/env bash
# The sanitizer, valgrind and fuzzing checks (CI runs them after the test
# suite):
#  1. builds tutti with clang, AddressSanitizer and UndefinedBehaviorSanitizer
#     (build-sanitize/, -Db_sanitize=address,undefined, -Dfuzz=true, no CUDA);
#  2. runs the unit tests there (the simulator sweep only with
#     SANITIZE_ALGORITHMS=1; the CUDA IPC protocol on its fake CUDA runtime),
#     and the mpirun tests on 2 and 3 ranks over
#     both transports;
#  3. builds the unit tests with ThreadSanitizer (build-tsan/) and runs the
#     [threads] tests: simulated ranks as concurrent threads over one shared
#     segment, and independent jobs side by side;
#  4. runs a 2-rank `tutti-bench --op all --check` under valgrind, both
#     transports (tests/valgrind/mpi.supp silences Open MPI's PMIx);
#  5. runs each libFuzzer target (tests/fuzz) for FUZZ_SECONDS (default 30)
#     from its seed corpus; a crash leaves its input in build-sanitize/fuzz-*.
# Ends with "N passed, N failed" like scripts/test.sh.
#   ASan's leak checker runs on the unit tests and fuzzers; under mpirun it is
#   off (Open MPI and UCX keep allocations until exit by design).
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
missing=()
for p in clang libclang-rt-14-dev valgrind; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
. scripts/mpi-env.sh
build=build-sanitize
passed=0 failed=0
step() {  # step NAME COMMAND...: runs, counts, prints a line
  local name=$1; shift
  local log=$build/sanitize-$name.log
  if "$@" >"$log" 2>&1; then
    passed=$((passed + 1)); echo "ok    $name"
  else
    failed=$((failed + 1)); echo "FAIL  $name (log: $log)"; tail -30 "$log" | sed 's/^/      /'
  fi
}
if [ ! -f $build/build.ninja ]; then
  CXX=clang++ CC=clang meson setup $build -Db_sanitize=address,undefined -Db_lundef=false \
    -Dfuzz=true -Dcuda=disabled -Dtorch=disabled -Dbuildtype=debugoptimized >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
fi
# Only what runs below (the apps, libtutti-mpi and the Fortran tests are a
# fifth of the build and nothing here runs them).
ninja -C $build tests/unit/tutti-unit-tests tests/unit/tutti-ipc-protocol-tests \
  tests/mpi/tutti-mpi-tests tests/fuzz/fuzz-tuning_file tests/fuzz/fuzz-environment >/dev/null ||
  { echo "FAIL build"; echo "0 passed, 1 failed"; exit 1; }

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=abort_on_error=0:detect_leaks=1
# The simulator's sweeps ([algorithms], [algorithms-movement]: every
# schedule on up to 1,000 simulated ranks) take minutes under ASan on 2
# cores: set SANITIZE_ALGORITHMS=1 to include them.
areas="reduce patterns schedule tuning config threads lru"
[ "${SANITIZE_ALGORITHMS:-0}" = 1 ] && areas="$areas algorithms algorithms-movement"
for area in $areas; do
  step "unit-$area" $build/tests/unit/tutti-unit-tests "[$area]"
done
# StagingTransport's CUDA IPC protocol on the fake CUDA runtime (no GPU needed).
step "unit-ipc-protocol" $build/tests/unit/tutti-ipc-protocol-tests
for transport in ucx mpi; do
  for np in 2 3; do
    step "mpi-np$np-$transport" env ASAN_OPTIONS=detect_leaks=0 mpirun -np $np $(oversubscribe_args $np) \
      --bind-to none -x ASAN_OPTIONS -x UBSAN_OPTIONS -x TUTTI_TRANSPORT=$transport \
      -x TUTTI_TIMEOUT=120 $build/tests/mpi/tutti-mpi-tests
  done
done
tsan=build-tsan
if [ ! -f $tsan/build.ninja ]; then
  CXX=clang++ CC=clang meson setup $tsan -Db_sanitize=thread -Db_lundef=false -Dcuda=disabled -Dtorch=disabled \
    -Dbuildtype=debugoptimized >/dev/null || { echo "FAIL tsan setup"; failed=$((failed + 1)); }
fi
step "tsan-build" ninja -C $tsan tests/unit/tutti-unit-tests
step "tsan-threads" env TSAN_OPTIONS=halt_on_error=1 $tsan/tests/unit/tutti-unit-tests "[threads]"
for transport in ucx mpi; do
  for mode in "" --in-place; do
    step "valgrind-np2-$transport${mode}" mpirun -np 2 $(oversubscribe_args 2) --bind-to none \
      -x TUTTI_TRANSPORT=$transport valgrind -q --error-exitcode=1 \
      --suppressions=tests/valgrind/mpi.supp build/apps/tutti-bench --op all --check $mode \
      --min-bytes 8 --max-bytes 256K --step-factor 8 --iters 2 --warmup 1
  done
done
seconds=${FUZZ_SECONDS:-30}
for target in tuning_file environment; do
  corpus=$build/fuzz-corpus-$target
  rm -rf "$corpus"; mkdir -p "$corpus"
  cp tests/fuzz/corpus/$target/* "$corpus"/
  step "fuzz-$target" $build/tests/fuzz/fuzz-$target -max_total_time=$seconds -timeout=10 \
    -artifact_prefix=$build/fuzz-$target- "$corpus"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
