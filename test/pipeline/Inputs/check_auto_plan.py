"""Checks het-compile --plan auto's choice against what it measured: both
local kinds were measured, the plan has one stage per kind, and the faster
kind's stage holds more of the model's FLOPs-weighted layers... simply: more
layers than the slower kind's stage (a non-uniform split).

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
plan = json.load(open(plan_path))
kind_of = {g["name"]: g["kind"] for g in plan["groups"]}
layers = {kind_of[s["group"]]: s["layers"][1] - s["layers"][0] for s in plan["stages"]}
if sorted(ms) != ["cpu.mlir", "cpu.onednn"]:
    sys.exit(f"measured kinds {sorted(ms)}, expected cpu.mlir and cpu.onednn")
if sorted(layers) != sorted(ms):
    sys.exit(f"plan stages on {sorted(layers)}, expected one per measured kind")
fast, slow = sorted(ms, key=ms.get)
print(f"{fast} {ms[fast]:.3f} ms/step -> {layers[fast]} layers; "
      f"{slow} {ms[slow]:.3f} ms/step -> {layers[slow]} layers")
if not layers[fast] > layers[slow]:
    sys.exit("the faster kind does not get more layers")
print("non-uniform split favours the faster kind")
