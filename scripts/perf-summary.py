#!/usr/bin/env python3
"""Summarises compare-mpi.sh tables for docs/PERFORMANCE.md.

    scripts/perf-summary.py docs/perf/np2-fair-barrier.csv [more.csv ...]

For every collective of each file: how many sizes have tutti at or below
the MPI library's time, and the range of tutti/MPI time ratios in three
bands of message size (small up to 4 KiB, mid up to 256 KiB, large above),
as one markdown table row per collective.
"""
import csv
import sys

BANDS = [("8 B-4 KiB", 0, 4096), ("8-256 KiB", 4097, 262144), ("512 KiB-64 MiB", 262145, 1 << 62)]


def band_range(rows, lo, hi):
    ratios = [float(r["ratio"]) for r in rows if lo <= int(r["bytes"]) <= hi]
    if not ratios:
        return "-"
    return f"{min(ratios):.2f}-{max(ratios):.2f}"


def main(paths):
    for path in paths:
        rows = list(csv.DictReader(open(path)))
        by_coll = {}
        for r in rows:
            by_coll.setdefault(r["collective"], []).append(r)
        print(f"\n{path}\n")
        print("| collective | at or below Open MPI | " + " | ".join(b[0] for b in BANDS) + " |")
        print("|---|---|" + "---|" * len(BANDS))
        total = below = 0
        for coll in sorted(by_coll):
            rs = by_coll[coll]
            ok = sum(1 for r in rs if float(r["ratio"]) <= 1.0)
            total += len(rs)
            below += ok
            cells = [band_range(rs, lo, hi) for _, lo, hi in BANDS]
            print(f"| {coll} | {ok} of {len(rs)} | " + " | ".join(cells) + " |")
        print(f"| all | {below} of {total} | | | |")


if __name__ == "__main__":
    main(sys.argv[1:])
