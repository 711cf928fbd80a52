"""Two ranks of torch.distributed on the hetccl backend, started by het-run:
rank 0 serves the c10d store on the root socket het-run hands it."""
import torch, torch.distributed as dist
import het.distributed
dist.init_process_group("hetccl")
t = torch.full((4,), float(dist.get_rank() + 1))
dist.all_reduce(t)
print(f"all_reduce sum={t[0].item():g}", flush=True)
dist.destroy_process_group()
