#!/usr/bin/env python3
"""hetccl vs Gloo as torch.distributed backends, in the same processes:
all_reduce bus bandwidth by size, and the DDP step time of the CNN
benchmark model's PyTorch twin (bench/codegen/torch_train.py).

    python bench/torch/ddp_bench.py [--ranks 2 4] [--repeats 2]

Each rank joins a Gloo world group and a hetccl group over the same ranks;
every measurement alternates the two backends (A, B, A, B, ...) so drift of
the machine hits both alike. Prints a Markdown table with the date, the
machine and the torch version. Run on loopback; 1 thread per rank.
"""

import argparse
import datetime
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20]


def worker(repeats):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    import het.distributed  # noqa: F401

    sys.path.insert(0, str(REPO / "bench" / "codegen"))
    from torch_train import torch_models

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    groups = {"gloo": dist.group.WORLD, "hetccl": dist.new_group(backend="hetccl")}

    def time_allreduce(group, nbytes):
        t = torch.ones(nbytes // 4)
        iters = max(5, min(200, (64 << 20) // nbytes))
        for _ in range(3):
            dist.all_reduce(t, group=group)
        dist.barrier(group=groups["gloo"])
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t, group=group)
        return (time.perf_counter() - start) / iters

    def ddp_step_time(group, steps=8):
        torch.manual_seed(0)
        model, _, lr = torch_models(torch)["CNN"]()
        ddp = DDP(model, process_group=group)
        opt = torch.optim.SGD(ddp.parameters(), lr=lr)
        x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
        loss_fn = torch.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad(set_to_none=True)
            loss_fn(ddp(x), y).backward()
            opt.step()

        step()
        step()
        dist.barrier(group=groups["gloo"])
        start = time.perf_counter()
        for _ in range(steps):
            step()
        return (time.perf_counter() - start) / steps

    rows = []
    for nbytes in SIZES:
        times = {"gloo": [], "hetccl": []}
        for _ in range(repeats * 3):
            for name in ("gloo", "hetccl"):
                times[name].append(time_allreduce(groups[name], nbytes))
        busbw = {k: 2 * (world - 1) / world * nbytes / statistics.median(v) / 1e9 for k, v in times.items()}
        rows.append((f"all_reduce {nbytes >> 10} KiB bus GB/s", busbw["gloo"], busbw["hetccl"],
                     busbw["hetccl"] / busbw["gloo"]))
    times = {"gloo": [], "hetccl": []}
    for _ in range(repeats):
        for name in ("gloo", "hetccl"):
            times[name].append(ddp_step_time(groups[name]))
    step = {k: statistics.median(v) * 1000 for k, v in times.items()}
    rows.append(("DDP CNN step ms (batch 32/rank)", step["gloo"], step["hetccl"], step["gloo"] / step["hetccl"]))
    if rank == 0:
        for r in rows:
            print(f"ROW {world}|{r[0]}|{r[1]:.3f}|{r[2]:.3f}|{r[3]:.2f}", flush=True)
    dist.destroy_process_group()


def launch(nprocs, repeats):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(nprocs):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(nprocs), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1",
                   PYTHONPATH=str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", "--repeats", str(repeats)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        sys.exit("ddp_bench: a rank failed:\n" + "\n".join(outs))
    return [line[4:].split("|") for line in outs[0].splitlines() if line.startswith("ROW ")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.repeats)
    import torch

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    print(f"# hetccl vs Gloo under torch.distributed, {datetime.date.today()}, {cpu}, {os.cpu_count()} cores, "
          f"torch {torch.__version__}, loopback, 1 thread per rank")
    print("| ranks | measure | Gloo | hetccl | hetccl / Gloo (higher is better) |")
    print("|---|---|---|---|---|")
    for n in args.ranks:
        for world, what, gloo, het, ratio in launch(n, args.repeats):
            print(f"| {world} | {what} | {gloo} | {het} | {ratio}x |", flush=True)


if __name__ == "__main__":
    main()
