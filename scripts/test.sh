#!/usr/bin/env bash
# The whole test suite: set up, build, run every test (unit tests in one
# process, then the mpirun tests for 1, 2, 3, 4, 5, 7 and 8 ranks over the UCX
# and MPI transports). Ends with a line "N passed, N failed[, N skipped]".
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
. scripts/mpi-env.sh
build=${BUILD_DIR:-build}
meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
rc=$?
# meson writes a JSON line per test; count the outcomes.
python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
counts = {"OK": 0, "FAIL": 0, "SKIP": 0, "TIMEOUT": 0, "ERROR": 0, "EXPECTEDFAIL": 0, "UNEXPECTEDPASS": 0}
for line in open(sys.argv[1]):
    line = line.strip()
    if line:
        r = json.loads(line)["result"]
        counts[r] = counts.get(r, 0) + 1
passed = counts["OK"] + counts["EXPECTEDFAIL"]
failed = counts["FAIL"] + counts["TIMEOUT"] + counts["ERROR"] + counts["UNEXPECTEDPASS"]
line = f"{passed} passed, {failed} failed"
if counts["SKIP"]:
    line += f", {counts['SKIP']} skipped"
print(line)
PY
exit $rc
