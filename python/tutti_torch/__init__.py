"""tutti as a torch.distributed backend.

    import tutti_torch
    torch.distributed.init_process_group("tutti")     # under mpirun or srun

`import tutti_torch` starts MPI if the program has not, registers the backend
"tutti", and, where the launcher did not set them, fills in RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT from MPI, so that init_process_group needs no
arguments. Process-group ranks are MPI_COMM_WORLD ranks (a clear error if
not); new_group(ranks=...) gets a tutti communicator over exactly those ranks.
CPU tensors, contiguous (a non-contiguous tensor is refused: call
.contiguous()). Each group runs its operations in order on a worker thread,
so async_op=True calls progress while Python computes.
"""
import atexit
import os
import socket

import torch.distributed as dist

from . import _C

__all__ = ["world_rank", "world_size"]


def world_rank():
    """This process's rank in MPI_COMM_WORLD."""
    return _C.world_rank()


def world_size():
    """The number of processes in MPI_COMM_WORLD."""
    return _C.world_size()


def _fill_launch_environment():
    rank, size = _C.world_rank(), _C.world_size()
    for name, value in (("RANK", rank), ("WORLD_SIZE", size)):
        given = os.environ.get(name)
        if given is not None and int(given) != value:
            raise RuntimeError(f"tutti: {name}={given} but MPI says {value}; "
                               "launch with mpirun or srun, one process per rank")
        os.environ[name] = str(value)
    # Collective: every rank takes part, whatever its environment says.
    address, port = "", ""
    if rank == 0:
        with socket.socket() as s:
            s.bind(("", 0))
            port = str(s.getsockname()[1])
        address = socket.gethostname()
    address = _C.bcast_string(address)
    port = _C.bcast_string(port)
    os.environ.setdefault("MASTER_ADDR", address)
    os.environ.setdefault("MASTER_PORT", port)


def _create(options, _pg_options=None):
    # torch leaves the list empty for the default (world) group.
    ranks = list(options.global_ranks_in_group) or list(range(options.group_size))
    return _C.create(options.group_rank, options.group_size, ranks,
                     options.timeout.total_seconds())


def _shutdown():
    _C.finalize()


_fill_launch_environment()
dist.Backend.register_backend("tutti", _create, extended_api=True)
atexit.register(_shutdown)
