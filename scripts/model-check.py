#!/usr/bin/env python3
"""The cost model against measurements: for every collective and algorithm
the model predicts, at a few sizes, the time tutti-bench measures (forced
algorithm, a barrier before each call, median of --iters) next to the time
tutti-sim predicts for the same shape and machine description.

    scripts/model-check.py --np 4 [--machine FILE] [--csv OUT]
    scripts/model-check.py --cluster 2x2 ...   (emulated nodes, as root)
    scripts/model-check.py --np 4 --calibrate STEM
                                     (calibrate into STEM-before.toml, measure,
                                      calibrate into STEM-after.toml, and
                                      summarise with each: these machines
                                      change speed state every few minutes,
                                      and a file predicts only its own state)
    scripts/model-check.py --np 4 --repeat 5 ...
                                     (each algorithm measured in 5 rounds,
                                      the median per size)
    scripts/model-check.py --np 4 --machine FILE --measured OLD.csv
                                     (predict again the times an earlier run
                                      measured: a model change judged on the
                                      same measurements)

Prints one row per (collective, algorithm, size) with predicted/measured and
a summary: the share within 2x, and within 25% on large messages (>= 1 MiB).
Exit status 0 whatever the error: this is a report (docs/SCALE.md).
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
SIM = os.path.join(BUILD, "apps", "tutti-sim")
BENCH = os.path.join(BUILD, "apps", "tutti-bench")
TUNE = os.path.join(BUILD, "apps", "tutti-tune")
COLLECTIVES = ["allreduce", "reduce", "bcast", "allgather", "reduce_scatter", "gather",
               "scatter", "alltoall", "barrier"]
LARGE = 1 << 20


def mpi_env():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    env.setdefault("OMPI_MCA_btl", "^openib,ofi")
    return env


def predictions(args, coll, machine):
    cmd = [SIM, "--collectives", coll, "--ranks", str(args.ranks), "--ranks-per-node",
           str(args.ranks_per_node), "--min-bytes", str(args.min_bytes), "--max-bytes",
           str(args.max_bytes), "--factor", str(args.factor), "--csv"]
    if machine:
        cmd += ["--machine", machine]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return list(csv.DictReader(io.StringIO(out)))


def launch(args, program):
    """The command that runs `program` (a list) on the job's ranks."""
    if args.cluster:
        return [os.path.join(ROOT, "tests", "cluster", "cluster.sh"), "run", args.cluster,
                "--timeout", "300", "--"] + program
    cmd = ["mpirun", "-np", str(args.ranks), "--bind-to", "none"]
    if args.ranks > os.cpu_count():
        cmd += ["--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]
    return cmd + program


def calibrate(args, path):
    subprocess.run(launch(args, [TUNE, "--calibrate", os.path.abspath(path)]), check=True,
                   capture_output=True, env=mpi_env())
    if args.cluster:
        # The emulated nodes share this machine's cores, which no rank can
        # see from inside its node (compute.host_cores, docs/SCALE.md).
        with open(path) as f:
            text = f.read()
        text = text.replace("[compute]\n", "[compute]\nhost_cores = %d  # emulated nodes on one "
                            "machine (scripts/model-check.py)\n" % os.cpu_count(), 1)
        with open(path, "w") as f:
            f.write(text)
    return path


def measure(args, coll, algorithm):
    bench = [BENCH, "--op", coll, "--algorithm", algorithm, "--min-bytes", str(args.min_bytes),
             "--max-bytes", str(args.max_bytes), "--step-factor", str(args.factor), "--iters",
             str(args.iters), "--warmup", str(args.warmup), "--format", "csv"]
    run = subprocess.run(launch(args, bench), capture_output=True, text=True, env=mpi_env())
    rows = [r for r in csv.DictReader(io.StringIO(run.stdout)) if r.get("collective") == coll]
    return {int(r["bytes"]): float(r["time_us"]) for r in rows if not r["error"] and r["time_us"]}


def measured_before(path, coll, algorithm):
    with open(path, newline="") as f:
        return {int(r["bytes"]): float(r["measured_us"]) for r in csv.DictReader(f)
                if r["collective"] == coll and r["algorithm"] == algorithm}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", dest="ranks", type=int, default=2)
    ap.add_argument("--cluster", help="emulated nodes, e.g. 2x2 (sets --np and ranks per node)")
    ap.add_argument("--machine", help="machine description for the model")
    ap.add_argument("--min-bytes", type=int, default=8)
    ap.add_argument("--max-bytes", type=int, default=2 << 20)
    ap.add_argument("--factor", type=int, default=64)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--collectives", default=",".join(COLLECTIVES))
    ap.add_argument("--csv", help="write the rows here too")
    ap.add_argument("--measured", help="take the measured times from this earlier --csv output "
                    "instead of running tutti-bench")
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure every algorithm this many times, in rounds over all of them, "
                    "and take each size's median (these machines change speed state every few "
                    "minutes; a single job's row is one state's)")
    ap.add_argument("--calibrate", metavar="STEM",
                    help="calibrate before and after measuring (STEM-before.toml, "
                    "STEM-after.toml) and summarise with each (the rows: with the first)")
    args = ap.parse_args()
    args.ranks_per_node = args.ranks
    if args.cluster:
        nodes, per_node = (int(x) for x in args.cluster.split("x"))
        args.ranks, args.ranks_per_node = nodes * per_node, per_node

    machines = [args.machine]
    if args.calibrate:
        machines = [calibrate(args, args.calibrate + "-before.toml")]
    # Every algorithm the model predicts, measured once.
    predicted = {}  # machine -> (coll, algorithm) -> {size: us}
    measured = {}   # (coll, algorithm) -> {size: us}
    for coll in args.collectives.split(","):
        for p in predictions(args, coll, machines[0]):
            if p["predicted_us"]:
                predicted.setdefault(machines[0], {}).setdefault(
                    (coll, p["algorithm"]), {})[int(p["bytes"])] = float(p["predicted_us"])
    if args.measured:
        for coll, algorithm in predicted.get(machines[0], {}):
            measured[(coll, algorithm)] = measured_before(args.measured, coll, algorithm)
    else:
        runs = {}  # (coll, algorithm) -> {size: [us, one per round]}
        for _ in range(max(1, args.repeat)):
            for key in predicted.get(machines[0], {}):
                for size, us in measure(args, *key).items():
                    runs.setdefault(key, {}).setdefault(size, []).append(us)
        measured = {key: {size: statistics.median(times) for size, times in sizes.items()}
                    for key, sizes in runs.items()}
    if args.calibrate:
        machines.append(calibrate(args, args.calibrate + "-after.toml"))
        for coll in args.collectives.split(","):
            for p in predictions(args, coll, machines[1]):
                if p["predicted_us"]:
                    predicted.setdefault(machines[1], {}).setdefault(
                        (coll, p["algorithm"]), {})[int(p["bytes"])] = float(p["predicted_us"])

    def rows_with(machine):
        rows = []
        for (coll, algorithm), sizes in predicted.get(machine, {}).items():
            got = measured.get((coll, algorithm), {})
            for size, us in sorted(sizes.items()):
                if size in got and got[size] > 0:
                    rows.append((coll, algorithm, size, us, got[size], us / got[size]))
        return rows

    rows = rows_with(machines[0])
    header = ["collective", "algorithm", "bytes", "predicted_us", "measured_us", "ratio"]
    out = csv.writer(sys.stdout)
    out.writerow(header)
    for r in rows:
        out.writerow([r[0], r[1], r[2], f"{r[3]:.2f}", f"{r[4]:.2f}", f"{r[5]:.3f}"])
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            for r in rows:
                w.writerow([r[0], r[1], r[2], f"{r[3]:.2f}", f"{r[4]:.2f}", f"{r[5]:.3f}"])
    if not rows:
        print("no rows: nothing measured", file=sys.stderr)
        return 0
    for machine in machines:
        summary = rows_with(machine)
        ratios = [r[5] for r in summary]
        within2 = sum(1 for x in ratios if 0.5 <= x <= 2.0)
        large = [r[5] for r in summary if r[2] >= LARGE]
        within25 = sum(1 for x in large if 0.8 <= x <= 1.25)
        print(f"# {len(summary)} rows, {args.ranks} ranks, {args.ranks_per_node} per node"
              f"{', machine ' + machine if machine else ''}: "
              f"within 2x {within2}/{len(summary)}; large (>= 1 MiB) within 25% "
              f"{within25}/{len(large)}; median ratio {statistics.median(ratios):.2f}, "
              f"min {min(ratios):.2f}, max {max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
