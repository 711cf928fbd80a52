"""Starts N worker processes the way torchrun does (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT on loopback) and collects what they printed."""

import os
import random
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def free_port() -> int:
    """A loopback port free now, below the kernel's ephemeral range when it
    can be (as hetccl's own pick, lib/CCL/Bootstrap/UniqueId.cpp): a port in
    that range can be taken as the source port of any connect() on the host
    before rank 0 binds it, and then rank 0 fails ("Address already in use")."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    floor = max(1024, low - 16384)
    for _ in range(64):
        port = random.randrange(floor, low) if floor < low else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Rank:
    rank: int
    returncode: int
    output: str


def launch(script: str, nprocs: int, *args, timeout: float = 300, env=None) -> List[Rank]:
    """Runs `script` (a file next to this one) as ranks 0..nprocs-1 and waits
    for all of them; a rank still running after `timeout` is killed and
    reported with returncode None."""
    port = free_port()
    procs = []
    for rank in range(nprocs):
        e = dict(os.environ)
        e.update({"RANK": str(rank), "WORLD_SIZE": str(nprocs), "LOCAL_RANK": str(rank),
                  "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1",
                  "PYTHONPATH": str(REPO / "python") + os.pathsep + e.get("PYTHONPATH", "")})
        e.update(env or {})
        procs.append(subprocess.Popen([sys.executable, str(HERE / script), *map(str, args)], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    deadline = time.monotonic() + timeout
    ranks = []
    for rank, p in enumerate(procs):
        try:
            out, _ = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
            ranks.append(Rank(rank, p.returncode, out))
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            ranks.append(Rank(rank, None, out + f"\n[killed after {timeout}s]"))
    return ranks


def describe(ranks: List[Rank]) -> str:
    return "\n".join(f"--- rank {r.rank} (exit {r.returncode}) ---\n{r.output[-4000:]}" for r in ranks)


def assert_all_ok(ranks: List[Rank]):
    assert all(r.returncode == 0 for r in ranks), describe(ranks)
