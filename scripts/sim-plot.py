#!/usr/bin/env python3
"""Plots of tutti-sim's predictions (gnuplot, PNG):

    build/apps/tutti-sim --collectives all --ranks 2,8,64,512,4096,16384 \\
        --ranks-per-node 8 --min-bytes 8 --max-bytes 1G --csv > sim.csv
    scripts/sim-plot.py sim.csv OUT_PREFIX [--ranks 16384]

writes OUT_PREFIX-sizes.png (every collective at --ranks: predicted time
against message size, one line per algorithm, the dispatcher's choice
marked) and OUT_PREFIX-ranks.png (allreduce at 8 B, 2 MiB and 512 MiB:
predicted time of each algorithm against the rank count).
"""
import argparse
import collections
import csv
import os
import subprocess
import tempfile


def write_series(path, points):
    """One "x y" line per point, in order of x, for gnuplot."""
    with open(path, "w") as f:
        for x, y in sorted(points):
            f.write(f"{x} {y}\n")
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("out_prefix")
    ap.add_argument("--ranks", type=int, default=16384)
    args = ap.parse_args()
    rows = list(csv.DictReader(open(args.csv)))
    rows = [r for r in rows if r["predicted_us"]]
    tmp = tempfile.mkdtemp()
    script = []

    # 1. Every collective at one rank count: time against size.
    at = [r for r in rows if int(r["ranks"]) == args.ranks]
    colls = sorted({r["collective"] for r in at if r["collective"] != "barrier"})
    panels = []
    for coll in colls:
        series = collections.defaultdict(list)
        chosen = []
        for r in at:
            if r["collective"] != coll:
                continue
            series[r["algorithm"]].append((int(r["bytes"]), float(r["predicted_us"])))
            if r["chosen"] == "1":
                chosen.append((int(r["bytes"]), float(r["predicted_us"])))
        files = [(algo, write_series(os.path.join(tmp, f"{coll}-{algo}.dat"), pts))
                 for algo, pts in sorted(series.items())]
        cpath = write_series(os.path.join(tmp, f"{coll}-chosen.dat"), chosen)
        panels.append((coll, files, cpath))
    nodes = at[0]["nodes"] if at else "?"
    layout_rows = (len(panels) + 2) // 3
    script += [
        f"set terminal pngcairo size 1500,{380 * layout_rows} font ',9' noenhanced",
        f"set output '{args.out_prefix}-sizes.png'",
        f"set multiplot layout {layout_rows},3 title 'tutti-sim: predicted time, {args.ranks} ranks on "
        f"{nodes} nodes (circles: what the dispatcher picks)'",
        "set logscale xy; set format x '%.0s%cB'; set format y '%.0e'; set grid",
        "set key top left; set xlabel 'message size'; set ylabel 'us'",
    ]
    for coll, files, cpath in panels:
        plots = [f"'{p}' using 1:2 with lines lw 2 title '{a}'" for a, p in files]
        plots.append(f"'{cpath}' using 1:2 with points pt 6 ps 1.5 lc rgb 'black' title 'chosen'")
        script += [f"set title '{coll}'", "plot " + ", ".join(plots)]
    script.append("unset multiplot")

    # 2. allreduce against the rank count, at three sizes.
    sizes = [8, 2 << 20, 512 << 20]  # on tutti-sim's default x4 grid from 8 B
    script += [
        f"set output '{args.out_prefix}-ranks.png'",
        "set terminal pngcairo size 1500,420 font ',9' noenhanced",
        "set multiplot layout 1,3 title 'tutti-sim: allreduce, predicted time against ranks "
        "(8 per node)'",
        "set logscale xy; set format x '%g'; set format y '%.0e'; set grid",
        "set key top left; set xlabel 'ranks'; set ylabel 'us'",
    ]
    for size in sizes:
        series = collections.defaultdict(list)
        for r in rows:
            if r["collective"] == "allreduce" and int(r["bytes"]) == size:
                series[r["algorithm"]].append((int(r["ranks"]), float(r["predicted_us"])))
        plots = []
        for algo, pts in sorted(series.items()):
            path = write_series(os.path.join(tmp, f"ranks-{size}-{algo}.dat"), pts)
            plots.append(f"'{path}' using 1:2 with linespoints lw 2 title '{algo}'")
        label = {8: "8 B", 2 << 20: "2 MiB", 512 << 20: "512 MiB"}[size]
        if plots:
            script += [f"set title 'allreduce {label}'", "plot " + ", ".join(plots)]
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True)
    print(f"sim-plot: wrote {args.out_prefix}-sizes.png, {args.out_prefix}-ranks.png")


if __name__ == "__main__":
    main()
