"""The tutti-sim grid of docs/SCALE.md (every collective, 8 B-1 GiB, 2-16,384
ranks of 8 per node) runs to the end, every grid point has a prediction for
the dispatcher's choice and at least one other algorithm, and wherever the
model decides (from 64 ranks: beyond the job shapes the built-in rules were
measured on) the choice is within 10% of the best prediction.

The time is printed; the target is 120 s on a 2-core machine: 78 s here
alone (2026-11-27, both cores, with the binary trees and representative
ranks first across nodes; 203 s before the extrapolations' runs were
shared between sizes and the grid's points spread over the cores one by
one), 168-284 s in CI, where other tests share the two cores; 143 s alone
(282 CPU seconds) with the machine in its slow state (2026-12-01), and
45 s (89 CPU seconds) later the same day, the VM running faster. So the
check counts CPU time, which other tests do not inflate, and fails above
three times the target on both cores (720 CPU seconds): a lost speed-up
(hours) fails it, a busy or slow machine not.
"""
import collections
import csv
import io
import resource
import subprocess
import sys
import time

COMMAND = ["--collectives", "all", "--ranks", "2,8,64,512,4096,16384", "--ranks-per-node", "8",
           "--min-bytes", "8", "--max-bytes", "1G", "--csv"]
TARGET_S = 120
CORES = 2  # the machine the target is set for


def main(sim: str) -> int:
    def cpu_of_children() -> float:
        u = resource.getrusage(resource.RUSAGE_CHILDREN)
        return u.ru_utime + u.ru_stime

    start, cpu_start = time.monotonic(), cpu_of_children()
    run = subprocess.run([sim] + COMMAND, capture_output=True, text=True)
    elapsed, cpu = time.monotonic() - start, cpu_of_children() - cpu_start
    problems = []
    if run.returncode != 0:
        problems.append(f"tutti-sim exited {run.returncode}: {run.stderr.strip()}")
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    points = collections.defaultdict(list)
    for r in rows:
        points[(r["collective"], int(r["ranks"]), int(r["bytes"]))].append(r)
    collectives = {c for c, _, _ in points}
    expected = {"allreduce", "reduce", "bcast", "allgather", "reduce_scatter", "gather",
                "scatter", "alltoall", "barrier"}
    for c in sorted(expected - collectives):
        problems.append(f"no rows for {c}")
    for p in (2, 8, 64, 512, 4096, 16384):
        for c in sorted(expected):
            if not any(k[0] == c and k[1] == p for k in points):
                problems.append(f"no rows for {c} on {p} ranks")
    model_points = 0
    for key, rs in sorted(points.items()):
        chosen = [r for r in rs if r["chosen"] == "1"]
        predicted = [float(r["predicted_us"]) for r in rs if r["predicted_us"]]
        if len(chosen) != 1 or not chosen[0]["predicted_us"]:
            problems.append(f"{key}: the dispatcher's choice has no prediction")
            continue
        if len(predicted) < 2:
            problems.append(f"{key}: only {rs[0]['algorithm']} has a prediction")
        if key[1] >= 64:
            model_points += 1
            ratio = float(chosen[0]["predicted_us"]) / min(predicted)
            if ratio > 1.10:
                problems.append(f"{key}: chosen {chosen[0]['algorithm']} is {ratio:.2f}x the best")
    if cpu > CORES * 3 * TARGET_S:
        problems.append(f"took {cpu:.0f} CPU seconds, more than three times the {TARGET_S} s "
                        f"target on {CORES} cores")
    for p in problems:
        print(p)
    print(f"tutti-sim grid: {len(points)} points, {model_points} decided by the model, "
          f"{len(rows)} rows in {elapsed:.1f} s, {cpu:.1f} CPU seconds (target {TARGET_S} s on "
          f"{CORES} cores); {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
