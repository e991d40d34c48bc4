"""all_reduce through torch.distributed: backend "tutti" against gloo, and
against tutti's C API called directly on the same tensor, in one job,
interleaved (round by round, each size in turn), one barrier before each call:

    PYTHONPATH=build/python mpirun -np 4 -x PYTHONPATH /usr/bin/python3 scripts/bench-torch.py

Prints, per size, rank 0's median time per call of each, and the ratios
gloo/tutti and tutti/direct. Options: --sizes (bytes, comma-separated),
--iters N per round (default 20; 5 from 8 MiB up), --rounds R (default 3).
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import tutti_torch  # noqa: F401  (registers the backend "tutti")
from tutti_torch import _C

DEFAULT_SIZES = "8,4096,65536,1048576,25000000,67108864"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    dist.init_process_group("tutti")
    rank, size = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    ways = {
        "tutti": lambda t: dist.all_reduce(t),
        "gloo": lambda t: dist.all_reduce(t, group=gloo),
        "direct": _C.direct_allreduce,
    }
    sizes = [int(s) for s in args.sizes.split(",")]
    # One tensor per (way, size), kept across calls (fresh memory faults in
    # slowly here and would be timed).
    tensors = {(w, b): torch.ones(max(1, b // 4)) for w in ways for b in sizes}
    times = {key: [] for key in tensors}
    for _ in range(args.rounds):
        for b in sizes:
            iters = args.iters if b < (8 << 20) else max(1, args.iters // 4)
            for w, call in ways.items():
                t = tensors[(w, b)]
                call(t)  # warm up
                for _ in range(iters):
                    dist.barrier(group=gloo)
                    start = time.perf_counter()
                    call(t)
                    times[(w, b)].append(time.perf_counter() - start)
                t.fill_(1.0)  # keep values small: sums of ones stay exact
    if rank == 0:
        print(f"all_reduce float32 sum, {size} ranks, median us per call (rank 0), "
              f"{args.rounds} interleaved rounds")
        print(f"{'bytes':>10} {'tutti':>10} {'gloo':>10} {'direct':>10} "
              f"{'gloo/tutti':>10} {'tutti/direct':>12}")
        for b in sizes:
            m = {w: statistics.median(times[(w, b)]) * 1e6 for w in ways}
            print(f"{b:>10} {m['tutti']:>10.1f} {m['gloo']:>10.1f} {m['direct']:>10.1f} "
                  f"{m['gloo'] / m['tutti']:>10.2f} {m['tutti'] / m['direct']:>12.2f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
