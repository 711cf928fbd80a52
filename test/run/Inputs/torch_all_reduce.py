"""Two ranks of torch.distributed on the hetccl backend, started by het-run:
rank 0 serves the c10d store on the root socket het-run hands it, and only
once init_process_group asks for it (importing het.distributed starts no
server)."""
import os
import torch, torch.distributed as dist
import het.distributed
served = "serving" if het.distributed._root_store is not None else "no store server"
handed = "root socket held" if "HETCCL_ROOT_FD" in os.environ else "no root socket"
print(f"after import: {served}, {handed}", flush=True)
dist.init_process_group("hetccl")
served = "serving" if het.distributed._root_store is not None else "no store server"
print(f"after init_process_group: {served}", flush=True)
t = torch.full((4,), float(dist.get_rank() + 1))
dist.all_reduce(t)
print(f"all_reduce sum={t[0].item():g}", flush=True)
dist.destroy_process_group()
