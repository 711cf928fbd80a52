"""hetccl as a torch.distributed backend.

    import het.distributed                    # registers the backend "hetccl"
    import torch.distributed as dist
    dist.init_process_group("hetccl")         # under torchrun or het-run
    dist.all_reduce(t)                        # hetccl underneath

Every collective of torch.distributed runs on CPU tensors of every dtype
(reductions on float32/64, float16, bfloat16, int8, uint8, int32, int64 and
complex SUM/AVG); CUDA and HIP tensors are staged through host memory.
Calls return at once and run in issue order on the backend's thread, so
DDP's bucketed all-reduce overlaps the backward pass. send/recv use
channels of their own (see docs/torch-distributed.md).

Per group, hetccl's algorithm and compression are chosen with
`Options(algorithm=..., compression=...)` passed as `pg_options`; the DDP
hooks in `het.distributed.hooks` compress gradients (int8, top-k) with error
feedback.

Under het-run (which sets HETCCL_ROOT but not MASTER_ADDR/MASTER_PORT), the
c10d store of `init_process_group()` is served at HETCCL_ROOT, on the socket
het-run listens on and hands to rank 0 (HETCCL_ROOT_FD).
"""

import datetime
import glob
import importlib
import importlib.machinery
import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import torch
import torch.distributed as dist

from ..errors import HetError

_REPO = Path(__file__).resolve().parents[3]

BACKEND = "hetccl"
ALGORITHMS = ("auto", "ring", "tree", "halving_doubling", "hierarchical", "ps", "oneshot", "twoshot")
COMPRESSIONS = ("none", "fp16", "bf16", "int8", "topk")


def _search_dirs() -> List[str]:
    """Where the compiled extension may be: an installed tree's
    lib/het/python (HET_PREFIX, next to HET_TOOLS_DIR's bin/, or next to the
    bin/ of the het-run on PATH), then a source checkout's build tree."""
    dirs = []
    prefix = os.environ.get("HET_PREFIX")
    if prefix:
        dirs.append(os.path.join(prefix, "lib", "het", "python"))
    tools = os.environ.get("HET_TOOLS_DIR")
    if tools:
        dirs.append(os.path.join(tools, os.pardir, "lib", "het", "python"))
    het_run = shutil.which("het-run")
    if het_run:
        dirs.append(os.path.join(os.path.dirname(os.path.realpath(het_run)), os.pardir, "lib", "het", "python"))
    if (_REPO / "python" / "het").is_dir():
        dirs.append(str(_REPO / "build" / "lib" / "het" / "python"))
    return dirs


def _load_extension():
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    for d in _search_dirs():
        for suffix in suffixes:
            path = os.path.join(d, "_hetccl" + suffix)
            if os.path.isfile(path):
                spec = importlib.util.spec_from_file_location(__name__ + "._hetccl", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module
    looked = ", ".join(os.path.normpath(d) for d in _search_dirs()) or "no configured folder"
    raise HetError(
        f"het.distributed: the compiled backend _hetccl{suffixes[0]} is not in {looked} "
        f"(build het with scripts/build.sh against this torch {torch.__version__}, or set HET_PREFIX "
        f"to an installed het)")


_C = _load_extension()
HetcclBackend = _C.HetcclBackend


@dataclass
class Options:
    """Per-process-group settings of the hetccl backend (pass as pg_options).

    algorithm: all-reduce algorithm, one of ALGORITHMS ("auto": the tuning
        database named by HETCCL_TUNING_DB where it has a record, else
        one-shot for small messages on one host, else hetccl's cost table).
    compression: for float32 SUM/AVG all-reduces of the group, one of
        COMPRESSIONS. Lossy: int8 keeps about 2 decimal digits per block of
        256 values, top-k keeps `topk_ratio` of the values (with error
        feedback inside hetccl).
    topk_ratio: fraction top-k keeps (0: hetccl's default, 0.01).
    timeout: per-call timeout; None takes init_process_group's.
    """

    algorithm: str = "auto"
    compression: str = "none"
    topk_ratio: float = 0.0
    timeout: Optional[datetime.timedelta] = None

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"het.distributed.Options: algorithm {self.algorithm!r} is not one of {ALGORITHMS}")
        if self.compression not in COMPRESSIONS:
            raise ValueError(f"het.distributed.Options: compression {self.compression!r} is not one of "
                             f"{COMPRESSIONS}")
        if not 0.0 <= self.topk_ratio <= 1.0:
            raise ValueError(f"het.distributed.Options: topk_ratio {self.topk_ratio} is not in [0, 1]")
        if self.timeout is not None and self.timeout.total_seconds() <= 0:
            raise ValueError(f"het.distributed.Options: timeout {self.timeout} is not positive")


def _create_backend(dist_options, pg_options):
    """torch.distributed's creator for backend "hetccl" (extended API)."""
    if pg_options is None:
        pg_options = Options()
    if not isinstance(pg_options, Options):
        raise TypeError(f"the hetccl backend takes pg_options=het.distributed.Options(...), "
                        f"got {type(pg_options).__name__}")
    timeout = pg_options.timeout or dist_options.timeout
    timeout_ms = max(1, int(timeout.total_seconds() * 1000))
    return HetcclBackend(dist_options.store, dist_options.group_rank, dist_options.group_size, timeout_ms,
                         pg_options.algorithm, pg_options.compression, pg_options.topk_ratio)


def _rendezvous_from_het_run():
    """het-run gives its ranks HETCCL_ROOT (and RANK, WORLD_SIZE) but not
    torchrun's MASTER_ADDR/MASTER_PORT; env:// initialisation then uses
    HETCCL_ROOT for the c10d store. Nothing else listens there: the backend
    makes its own ids (on a free port) and passes them through the store.
    Rank 0's store server starts only when env:// initialisation asks for
    the store (_serve_root_store_lazily): importing this module starts
    nothing."""
    root = os.environ.get("HETCCL_ROOT")
    if not root or os.environ.get("MASTER_ADDR") or os.environ.get("MASTER_PORT"):
        return
    host, sep, port = root.rpartition(":")
    if sep and host and port.isdigit():
        os.environ["MASTER_ADDR"] = host
        os.environ["MASTER_PORT"] = port
        if "HETCCL_ROOT_FD" in os.environ:
            _serve_root_store_lazily(host, int(port))


# Rank 0's c10d store server, on het-run's socket; kept for the process's
# life once env:// initialisation has started it.
_root_store = None


def _serve_root_store_lazily(host: str, port: int):
    """Wraps torch's env:// rendezvous handler so that rank 0's store server
    starts on the first env:// initialisation, with that call's timeout, and
    never in a program that does not initialise a process group.
    torch.distributed has no public way to wrap a bundled handler
    (register_rendezvous_handler refuses a scheme it has), so this replaces
    the entry in its handler table; a torch without that table gets the
    server at once, as before."""
    # the module, not the function torch.distributed re-exports under its name
    rdzv = importlib.import_module("torch.distributed.rendezvous")

    handlers = getattr(rdzv, "_rendezvous_handlers", None)
    env_handler = handlers.get("env") if isinstance(handlers, dict) else None
    if env_handler is None:
        _serve_store_on_inherited_socket(host, port, datetime.timedelta(minutes=30))
        return

    def env_with_root_store(url, timeout=dist.default_pg_timeout, **kwargs):
        _serve_store_on_inherited_socket(host, port, timeout)
        return env_handler(url, timeout=timeout, **kwargs)

    handlers["env"] = env_with_root_store


def _serve_store_on_inherited_socket(host: str, port: int, timeout: datetime.timedelta):
    """het-run listens at HETCCL_ROOT itself and hands rank 0 the socket
    (HETCCL_ROOT_FD), so nothing on the host can take the port before rank 0
    binds it; the c10d store's own bind would then fail (EADDRINUSE). Rank 0
    serves the store on that socket instead: a multi-tenant server, which the
    store env:// initialisation makes next (multi-tenant, same port) reuses.
    torch's libuv server takes no listening socket, so this one is the
    classic server. Only the first call serves: the socket is handed once."""
    global _root_store
    fd = os.environ.pop("HETCCL_ROOT_FD", None)
    if fd is None:
        return
    if not fd.isdigit():
        raise HetError(f"HETCCL_ROOT_FD={fd!r} is not a file descriptor number")
    _root_store = dist.TCPStore(host, port, None, True, timeout,
                                wait_for_workers=False, multi_tenant=True, master_listen_fd=int(fd),
                                use_libuv=False)


def backend(group=None) -> "HetcclBackend":
    """The hetccl backend object of `group` (default: the world group)."""
    group = group if group is not None else dist.group.WORLD
    b = group._get_backend(torch.device("cpu"))
    if not isinstance(b, HetcclBackend):
        raise HetError(f"het.distributed.backend: the group's backend is {type(b).__name__}, not hetccl")
    return b


def is_available() -> bool:
    return True


if not hasattr(dist.Backend, BACKEND.upper()):
    dist.Backend.register_backend(BACKEND, _create_backend, extended_api=True, devices=["cpu", "cuda"])
_rendezvous_from_het_run()

from . import hooks  # noqa: E402  (needs the names above)

__all__ = ["ALGORITHMS", "BACKEND", "COMPRESSIONS", "HetcclBackend", "Options", "backend", "hooks",
           "is_available"]
