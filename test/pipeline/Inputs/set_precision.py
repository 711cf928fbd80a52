"""Copies a plan JSON, stating number formats as het-plan writes them:
--stage NAME=FORMAT sets a stage's "precision" (on every replica group of
a stage in the replica_groups form), --replicas NAME/GROUP=FORMAT one
replica group's, --formats GROUP=F1,F2 a group's "formats" (what its kind
has).

usage: set_precision.py IN.json OUT.json [--stage s0=bf16 ...] [--replicas s0/mlir=fp16 ...]
                        [--formats onednn=fp32,bf16 ...]
"""
import argparse
import json

p = argparse.ArgumentParser()
p.add_argument("plan")
p.add_argument("out")
p.add_argument("--stage", action="append", default=[])
p.add_argument("--replicas", action="append", default=[])
p.add_argument("--formats", action="append", default=[])
args = p.parse_args()
plan = json.load(open(args.plan))
stages = {s.get("name", "s%d" % i): s for i, s in enumerate(plan["stages"])}
for item in args.stage:
    name, fmt = item.split("=")
    stage = stages[name]
    for target in stage.get("replica_groups", [stage]):
        target["precision"] = fmt
for item in args.replicas:
    where, fmt = item.split("=")
    name, group = where.split("/")
    for target in stages[name].get("replica_groups", [stages[name]]):
        if target["group"] == group:
            target["precision"] = fmt
groups = {g["name"]: g for g in plan["groups"]}
for item in args.formats:
    name, fmts = item.split("=")
    groups[name]["formats"] = fmts.split(",")
json.dump(plan, open(args.out, "w"), indent=1)
