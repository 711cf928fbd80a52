"""Writes a 2x2 pipeline plan: het-plan's plan (argv[1], for its groups and
batch) with two stages, layers [0, split) on two devices of argv[3] and
[split, L) on two of argv[4], in argv[6] micro-batches; argv[2] is the
output, argv[5] the split."""
import json
import sys

plan = json.load(open(sys.argv[1]))
split = int(sys.argv[5])
plan["stages"] = [
    {"name": "s0", "layers": [0, split], "tensor_parallel": 1, "all_reduce": "ring",
     "replica_groups": [{"group": sys.argv[3], "replicas": 2}]},
    {"name": "s1", "layers": [split, plan["layers"]], "tensor_parallel": 1, "all_reduce": "ring",
     "replica_groups": [{"group": sys.argv[4], "replicas": 2}]},
]
plan["micro_batches"] = int(sys.argv[6])
plan.pop("predicted_iteration_s", None)
json.dump(plan, open(sys.argv[2], "w"), indent=1)
