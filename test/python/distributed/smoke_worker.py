"""The smallest hetccl job: init from the launcher's environment (torchrun's
MASTER_ADDR/MASTER_PORT, or het-run's HETCCL_ROOT), one all-reduce."""

import torch
import torch.distributed as dist

import het.distributed  # noqa: F401

dist.init_process_group("hetccl")
t = torch.full((4,), float(dist.get_rank() + 1))
dist.all_reduce(t)
print(f"RESULT rank{dist.get_rank()}_sum={t[0].item():g}", flush=True)
dist.destroy_process_group()
