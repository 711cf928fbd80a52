#!/usr/bin/env python3
"""DistributedDataParallel training over hetccl: the same script under
torchrun or het-run.

    .venv/bin/torchrun --nproc-per-node 2 examples/torch/ddp_train.py --steps 20
    build/bin/het-run -n 2 .venv/bin/python examples/torch/ddp_train.py --compression int8

Trains the CNN of examples/torch/cifar_net.py on a fixed random data set,
each rank on its own shard; rank 0 prints the loss averaged over ranks and the last four steps (one pass
over a rank's four batches).
"""

import argparse
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import het.distributed as hd
from het.distributed import hooks

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cifar_net import Net  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=16, help="samples per rank and step")
    ap.add_argument("--algorithm", default="auto", choices=hd.ALGORITHMS)
    ap.add_argument("--compression", default="none", choices=["none", "int8", "topk"],
                    help="gradient compression by a DDP hook, with error feedback")
    args = ap.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("hetccl", pg_options=hd.Options(algorithm=args.algorithm))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(Net())
    if args.compression != "none":
        model.register_comm_hook(hooks.CompressionState(compression=args.compression),
                                 hooks.compressed_allreduce_hook)
    # Labels a fixed linear teacher gives (the same on every rank), so there
    # is something to learn; each rank draws its own inputs.
    teacher = torch.randn(3 * 32 * 32, 10, generator=torch.Generator().manual_seed(1234))
    g = torch.Generator().manual_seed(rank)
    data = []
    for _ in range(4):
        x = torch.randn(args.batch, 3, 32, 32, generator=g)
        data.append((x, (x.flatten(1) @ teacher).argmax(1)))
    opt = torch.optim.Adam(model.parameters(), lr=0.003)
    loss_fn = torch.nn.CrossEntropyLoss()
    recent = []
    for step in range(args.steps):
        x, y = data[step % len(data)]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        recent = (recent + [mean.item()])[-4:]
        if rank == 0 and (step % 5 == 4 or step == args.steps - 1):
            mean = torch.tensor(sum(recent) / len(recent))
            print(f"step {step + 1} loss {mean.item():.4f} ({world} ranks, hetccl, {args.compression})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
