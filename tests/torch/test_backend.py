"""The torch.distributed backend "tutti" under mpirun: every operation on
random data against a reference computed from every rank's inputs (each rank
can rebuild any rank's data from its seed), for every dtype tutti has, on the
world group and on a new_group of some ranks; async work; clear errors; an
unmatched receive that times out.
Prints "torch backend: N checks, 0 failed" on rank 0; exits 1 on a failure."""
import math
import os
import sys
import time

import torch
import torch.distributed as dist

import tutti_torch

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
          torch.int8, torch.uint8, torch.int32, torch.int64]
failures = []
checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)


def data(rank, n, dtype, salt=0):
    """Rank `rank`'s input: small values, exact in every dtype's sums."""
    g = torch.Generator().manual_seed(1000 * rank + 7 * n + salt)
    return torch.randint(0, 4, (n,), generator=g).to(dtype)


def close(a, b):
    if a.dtype.is_floating_point:
        return torch.allclose(a.double(), b.double(), rtol=1e-2, atol=1e-2)
    return torch.equal(a, b)


def run(group, ranks):
    me = dist.get_rank(group)
    p = len(ranks)
    for dtype in DTYPES:
        for n in (0, 1, 7, 1031):
            inputs = [data(r, n, dtype) for r in ranks]
            label = f"{dtype} n={n} group={ranks}"
            # all_reduce: sum, product (ones and twos only), min, max, avg
            for op, ref in ((dist.ReduceOp.SUM, lambda xs: sum(x.double() for x in xs)),
                            (dist.ReduceOp.MIN, lambda xs: torch.stack(xs).min(0).values),
                            (dist.ReduceOp.MAX, lambda xs: torch.stack(xs).max(0).values)):
                t = inputs[me].clone()
                dist.all_reduce(t, op=op, group=group)
                expected = ref(inputs).to(dtype) if n else t
                check(close(t, expected), f"all_reduce {op} {label}")
            small = [(x % 2 + 1).to(dtype) for x in inputs]
            t = small[me].clone()
            dist.all_reduce(t, op=dist.ReduceOp.PRODUCT, group=group)
            expected = torch.stack([s.double() for s in small]).prod(0).to(dtype)
            check(n == 0 or close(t, expected), f"all_reduce product {label}")
            if dtype.is_floating_point:
                t = inputs[me].clone()
                dist.all_reduce(t, op=dist.ReduceOp.AVG, group=group)
                expected = (sum(x.double() for x in inputs) / p).to(dtype)
                check(n == 0 or close(t, expected), f"all_reduce avg {label}")
            # broadcast and reduce from the last rank of the group
            root = ranks[-1]
            t = inputs[me].clone()
            dist.broadcast(t, src=root, group=group)
            check(torch.equal(t, inputs[-1]), f"broadcast {label}")
            t = inputs[me].clone()
            dist.reduce(t, dst=root, group=group)
            if me == p - 1:
                check(n == 0 or close(t, sum(x.double() for x in inputs).to(dtype)),
                      f"reduce {label}")
            else:
                check(torch.equal(t, inputs[me]), f"reduce leaves non-roots {label}")
            # all_gather, both forms
            outs = [torch.empty(n, dtype=dtype) for _ in ranks]
            dist.all_gather(outs, inputs[me], group=group)
            check(all(torch.equal(o, x) for o, x in zip(outs, inputs)), f"all_gather {label}")
            out = torch.empty(n * p, dtype=dtype)
            dist.all_gather_into_tensor(out, inputs[me], group=group) \
                if hasattr(dist, "all_gather_into_tensor") else \
                dist._all_gather_base(out, inputs[me], group=group)
            check(torch.equal(out, torch.cat(inputs)), f"all_gather_into_tensor {label}")
            # reduce_scatter, both forms: rank r gets block r of the sum
            blocks = [[data(r, n, dtype, salt=b) for b in range(p)] for r in ranks]
            out = torch.empty(n, dtype=dtype)
            dist.reduce_scatter(out, blocks[me], group=group)
            expected = sum(blocks[r][me].double() for r in range(p)).to(dtype)
            check(n == 0 or close(out, expected), f"reduce_scatter {label}")
            out = torch.empty(n, dtype=dtype)
            dist._reduce_scatter_base(out, torch.cat(blocks[me]), group=group)
            check(n == 0 or close(out, expected), f"_reduce_scatter_base {label}")
            # all_to_all_single, even and with split sizes; all_to_all
            out = torch.empty(n * p, dtype=dtype)
            dist.all_to_all_single(out, torch.cat(blocks[me]), group=group)
            check(torch.equal(out, torch.cat([blocks[r][me] for r in range(p)])),
                  f"all_to_all_single {label}")
            sizes = [(me + r) % 3 for r in range(p)]        # what I send to r
            recv_sizes = [(r + me) % 3 for r in range(p)]   # what r sends me
            send = torch.cat([data(ranks[me], sizes[r], dtype, salt=r) for r in range(p)])
            out = torch.empty(sum(recv_sizes), dtype=dtype)
            dist.all_to_all_single(out, send, recv_sizes, sizes, group=group)
            expected = torch.cat([data(ranks[r], recv_sizes[r], dtype, salt=me) for r in range(p)])
            check(torch.equal(out, expected), f"all_to_all_single splits {label}")
            outs = [torch.empty(n, dtype=dtype) for _ in ranks]
            dist.all_to_all(outs, list(blocks[me]), group=group)
            check(all(torch.equal(outs[r], blocks[r][me]) for r in range(p)), f"all_to_all {label}")
            # gather and scatter to and from the first rank of the group
            root = ranks[0]
            outs = [torch.empty(n, dtype=dtype) for _ in ranks] if me == 0 else None
            dist.gather(inputs[me], outs, dst=root, group=group)
            if me == 0:
                check(all(torch.equal(o, x) for o, x in zip(outs, inputs)), f"gather {label}")
            out = torch.empty(n, dtype=dtype)
            dist.scatter(out, list(blocks[0]) if me == 0 else None, src=root, group=group)
            check(torch.equal(out, blocks[0][me]), f"scatter {label}")
    # allreduce_coalesced: several tensors, one group (the small ones fused,
    # 70001 float32 above TUTTI_GROUP_FUSE_BYTES on its own)
    sizes = (3, 0, 17, 70001, 1)
    ts = [data(ranks[me], k, torch.float32, salt=k).clone() for k in sizes]
    dist.all_reduce_coalesced(ts, group=group)
    for k, t in zip(sizes, ts):
        check(torch.equal(t, sum(data(r, k, torch.float32, salt=k) for r in ranks)),
              f"all_reduce_coalesced {k} group={ranks}")
    ts = [data(ranks[me], k, torch.int64, salt=k).clone() for k in sizes]
    dist.all_reduce_coalesced(ts, op=dist.ReduceOp.MAX, group=group)
    for k, t in zip(sizes, ts):
        want = torch.stack([data(r, k, torch.int64, salt=k) for r in ranks]).max(dim=0).values
        check(torch.equal(t, want), f"all_reduce_coalesced max {k} group={ranks}")
    # all_gather_coalesced: several tensors of different sizes and shapes,
    # every rank's in one call
    shapes = ((3,), (0,), (2, 5), (70001,), (1,))
    for dtype in (torch.float32, torch.int64):
        def tensors(rank):
            return [data(rank, math.prod(s), dtype, salt=k).reshape(s)
                    for k, s in enumerate(shapes)]
        outs = [[torch.empty(s, dtype=dtype) for s in shapes] for _ in ranks]
        dist.all_gather_coalesced(outs, tensors(ranks[me]), group=group)
        check(all(torch.equal(o, x) for r in range(p) for o, x in zip(outs[r], tensors(ranks[r]))),
              f"all_gather_coalesced {dtype} group={ranks}")
    # async: several in flight, waited in reverse order; the future too
    works, tensors = [], []
    for k in range(4):
        t = torch.full((1000,), float(me + k))
        tensors.append(t)
        works.append(dist.all_reduce(t, group=group, async_op=True))
    for w in reversed(works):
        w.wait()
        check(w.is_completed(), f"is_completed after wait group={ranks}")
    for k, t in enumerate(tensors):
        check(torch.equal(t, torch.full((1000,), float(sum(range(p)) + p * k))),
              f"async all_reduce {k} group={ranks}")
    t = torch.ones(3)
    fut = dist.all_reduce(t, group=group, async_op=True).get_future()
    check(torch.equal(fut.wait()[0], torch.full((3,), float(p))), f"future group={ranks}")
    # send/recv around a ring, posted in either order; isend/irecv
    if p > 1:
        right, left = ranks[(me + 1) % p], ranks[(me - 1) % p]
        got = torch.empty(5)
        if me % 2 == 0:
            dist.send(torch.full((5,), float(me)), right, group=group)
            dist.recv(got, left, group=group)
        else:
            dist.recv(got, left, group=group)
            dist.send(torch.full((5,), float(me)), right, group=group)
        check(torch.equal(got, torch.full((5,), float((me - 1) % p))), f"send/recv group={ranks}")
        got = torch.empty(100000)
        reqs = [dist.irecv(got, left, group=group),
                dist.isend(torch.full((100000,), float(me)), right, group=group)]
        for r in reqs:
            r.wait()
        check(torch.equal(got, torch.full((100000,), float((me - 1) % p))),
              f"isend/irecv group={ranks}")
        # recv without src (recvAnysource): the group's first rank takes one
        # message from each other rank, small and large, and learns who sent
        # it (a global rank, as torch reports it). A tag per size: a rank's
        # second message may come before another rank's first.
        for tag, n in ((3, 7), (4, 50000)):
            if me == 0:
                senders = []
                for _ in range(p - 1):
                    got = torch.empty(n, dtype=torch.float64)
                    src = dist.recv(got, group=group, tag=tag)
                    senders.append(src)
                    check(torch.equal(got, torch.full((n,), float(src) * 10 + n)),
                          f"recv from any source {n} from {src} group={ranks}")
                check(sorted(senders) == sorted(ranks[1:]),
                      f"recv from any source {n}: senders {senders} group={ranks}")
            else:
                dist.send(torch.full((n,), float(ranks[me]) * 10 + n, dtype=torch.float64),
                          ranks[0], group=group, tag=tag)
    dist.barrier(group=group)


def errors():
    """Bad input is a clear Python error, raised by the call."""
    for bad, needle in ((torch.ones(4, 4).t(), "contiguous"),
                        (torch.ones(3, dtype=torch.bool), "datatype")):
        try:
            dist.all_reduce(bad)
            check(False, f"no error for {needle}")
        except RuntimeError as e:
            check(needle in str(e), f"error names {needle}: {e}")
    # all_gather_coalesced's outputs must mirror the inputs on every rank
    p = dist.get_world_size()
    for outs, needle in (([[torch.empty(3)]] * (p + 1), "one output list per rank"),
                         ([[torch.empty(3), torch.empty(1)]] * p, "must hold 1 tensors"),
                         ([[torch.empty(4)]] * p, "must hold 3 elements")):
        try:
            dist.all_gather_coalesced(outs, [torch.ones(3)])
            check(False, f"no error for all_gather_coalesced: {needle}")
        except RuntimeError as e:
            check(needle in str(e), f"all_gather_coalesced error names '{needle}': {e}")


def group_with_timeout(seconds):
    """A new group of every rank whose TUTTI_TIMEOUT is `seconds`."""
    saved = os.environ.get("TUTTI_TIMEOUT")
    os.environ["TUTTI_TIMEOUT"] = seconds
    group = dist.new_group(backend="tutti")
    if saved is None:
        del os.environ["TUTTI_TIMEOUT"]
    else:
        os.environ["TUTTI_TIMEOUT"] = saved
    return group


def destroy_with_pending_recv():
    """Destroying a group whose worker still holds the only reference to a
    pending receive (Python dropped its Work and tensor) ends: the receive
    times out on the worker, which frees the tensor, and that takes the GIL
    that destroy_process_group was called with (this hung in 1 of 4 CI runs
    when the timing made it happen at exit)."""
    if dist.get_world_size() < 2:
        return
    group = group_with_timeout("3")
    if dist.get_rank() == 0:
        dist.irecv(torch.empty(4), 1, group=group, tag=98)  # Work dropped at once
    else:
        time.sleep(2)  # reach the teardown within its 3 s of rank 0 (which starts at 3 s)
    start = time.monotonic()
    dist.destroy_process_group(group)
    check(time.monotonic() - start < 30, "destroying a group with a pending receive")
    dist.barrier()


def unmatched_recv_times_out():
    """A receive whose send never comes fails its wait at TUTTI_TIMEOUT (2 s
    for this group), naming the peer, instead of waiting for ever."""
    if dist.get_world_size() < 2:
        return
    group = group_with_timeout("2")
    if dist.get_rank() == 0:
        start = time.monotonic()
        work = dist.irecv(torch.empty(4), 1, group=group, tag=99)
        try:
            work.wait()
            check(False, "an unmatched recv completed")
        except RuntimeError as e:
            waited = time.monotonic() - start
            check("timed out" in str(e) and "rank 1" in str(e) and 1.5 < waited < 30,
                  f"unmatched recv: {e} after {waited:.1f} s")
    dist.barrier()


def main():
    dist.init_process_group("tutti")
    world = list(range(dist.get_world_size()))
    check(dist.get_rank() == tutti_torch.world_rank(), "ranks are MPI's")
    check(dist.get_backend() == "tutti", "backend name")
    run(None, world)
    # Groups of the odd ranks and of the even ones (from 2 ranks on: torch
    # 1.13 reads an empty rank list as the whole world).
    me = dist.get_rank()
    if len(world) > 1:
        odd = [r for r in world if r % 2 == 1]
        even = [r for r in world if r % 2 == 0]
        groups = [dist.new_group(ranks=odd, backend="tutti"),
                  dist.new_group(ranks=even, backend="tutti")]
        for group, ranks in zip(groups, (odd, even)):
            if me in ranks:
                run(group, ranks)
    errors()
    unmatched_recv_times_out()
    destroy_with_pending_recv()
    failed = torch.tensor([len(failures)])
    dist.all_reduce(failed)
    for f in failures[:10]:
        print(f"rank {me}: FAILED {f}", flush=True)
    if me == 0:
        print(f"torch backend: {checks} checks, {int(failed)} failed", flush=True)
    dist.destroy_process_group()
    sys.exit(1 if int(failed) else 0)


main()
