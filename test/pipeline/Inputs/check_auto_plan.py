"""Checks het-compile --plan auto's choice against what it measured: both
local kinds were measured, and each device of the faster kind gets more of
the work than each device of the slower kind -- work counted as layers x
samples of each micro-batch, so a pipeline split by layers and a stage
whose replicas take shares by speed both count.

usage: check_auto_plan.py COMPILE_STDERR PLAN.json"""
import json
import re
import sys

report, plan_path = sys.argv[1], sys.argv[2]
ms = {}
for line in open(report):
    m = re.match(r"measured (\S+) \((\w+) kernels\): ([0-9.]+) ms per step", line)
    if m:
        ms[m.group(1)] = float(m.group(3))
if sorted(ms) != ["cpu.mlir", "cpu.onednn"]:
    sys.exit(f"measured kinds {sorted(ms)}, expected cpu.mlir and cpu.onednn")
plan = json.load(open(plan_path))
kind_of = {g["name"]: g["kind"] for g in plan["groups"]}
micro = plan["global_batch"] // plan["micro_batches"]
work = {kind: 0.0 for kind in ms}
devices = {kind: 0 for kind in ms}
for s in plan["stages"]:
    layers = s["layers"][1] - s["layers"][0]
    tp = s.get("tensor_parallel", 1)
    groups = s.get("replica_groups") or [{"group": s["group"], "replicas": s["replicas"]}]
    replicas = sum(g["replicas"] for g in groups)
    for g in groups:
        kind = kind_of[g["group"]]
        samples = g.get("micro_batch_size", micro / replicas)
        work[kind] += layers * samples * g["replicas"]
        devices[kind] += g["replicas"] * tp
fast, slow = sorted(ms, key=ms.get)
per = {k: work[k] / devices[k] if devices[k] else 0.0 for k in ms}
print(f"{fast} {ms[fast]:.3f} ms/step -> {per[fast]:.1f} layer-samples per device; "
      f"{slow} {ms[slow]:.3f} ms/step -> {per[slow]:.1f}")
if not per[fast] > per[slow]:
    sys.exit("the faster kind does not get more work per device")
print("the faster kind gets more work per device")
