"""A small model trained with DistributedDataParallel over the backend
"tutti", the same model over gloo, and the same again without DDP, its
gradients averaged by tutti's C API called directly after the backward pass
("direct": what the binding and DDP's overlap are measured against), in the
same job, step by step:

    PYTHONPATH=build/python mpirun -np 4 -x PYTHONPATH /usr/bin/python3 examples/ddp_train.py

Each step prints the loss of every run (the same data and initial weights, so
they agree to rounding) and the time per step of each (rank 0). Options:
--steps N (default 20), --width W (hidden width; default 1024: 1.1 M
parameters, 4.5 MB of gradients per step).
"""
import argparse
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import tutti_torch  # registers the backend "tutti"
from tutti_torch import _C


class Direct:
    """The model as it is, its gradients summed in place by tutti_allreduce
    (one call per parameter, after the whole backward pass) and divided by
    the rank count, as DDP averages them."""

    def __init__(self, module, size):
        self.module, self.size = module, size

    def __call__(self, x):
        return self.module(x)

    def parameters(self):
        return self.module.parameters()

    def average_gradients(self):
        for p in self.module.parameters():
            _C.direct_allreduce(p.grad)
            p.grad /= self.size


def model(width, seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, 1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--width", type=int, default=1024)
    args = parser.parse_args()

    dist.init_process_group("tutti")
    rank, size = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    runs = {"tutti": DDP(model(args.width, 0), process_group=dist.group.WORLD),
            "gloo": DDP(model(args.width, 0), process_group=gloo),
            "direct": Direct(model(args.width, 0), size)}
    optimizers = {name: torch.optim.SGD(m.parameters(), lr=0.01) for name, m in runs.items()}
    if rank == 0:
        print(f"{size} ranks, {sum(p.numel() for p in runs['tutti'].parameters())} parameters")
        print(f"{'step':>4} {'loss tutti':>12} {'loss gloo':>12} {'loss direct':>12} "
              f"{'ms tutti':>9} {'ms gloo':>9} {'ms direct':>9}")
    totals = {name: 0.0 for name in runs}
    for step in range(args.steps):
        g = torch.Generator().manual_seed(step * size + rank)
        x = torch.randn(256, 64, generator=g)
        y = x[:, :1] * 2 + 1
        losses, times = {}, {}
        for name, m in runs.items():
            dist.barrier()  # each run's step starts together on every rank
            start = time.perf_counter()
            optimizers[name].zero_grad()
            loss = torch.nn.functional.mse_loss(m(x), y)
            loss.backward()  # DDP allreduces the gradient buckets here
            if isinstance(m, Direct):
                m.average_gradients()
            optimizers[name].step()
            times[name] = (time.perf_counter() - start) * 1e3
            losses[name] = loss.item()
            if step > 0:
                totals[name] += times[name]
        if rank == 0:
            print(f"{step:>4} {losses['tutti']:>12.6f} {losses['gloo']:>12.6f} "
                  f"{losses['direct']:>12.6f} {times['tutti']:>9.2f} {times['gloo']:>9.2f} "
                  f"{times['direct']:>9.2f}", flush=True)
    if rank == 0 and args.steps > 1:
        n = args.steps - 1
        print(f"mean time per step after the first: tutti {totals['tutti'] / n:.2f} ms, "
              f"gloo {totals['gloo'] / n:.2f} ms, direct {totals['direct'] / n:.2f} ms")
    dist.destroy_process_group()


main()
