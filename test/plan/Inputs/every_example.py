#!/usr/bin/env python3
"""het-plan on every example model and cluster: each pair either gets a
plan or does not fit in memory anywhere (and then no baseline it prints
runs either: a plan a baseline shows exists must be found). For each plan
found, the listed plans come in non-decreasing order of their printed
iteration time, and no "compared with" line shows a baseline faster than
the chosen plan.

usage: every_example.py HET_PLAN EXAMPLES_DIR"""
import glob
import os
import re
import subprocess
import sys

het_plan, examples = sys.argv[1], sys.argv[2]
models = sorted(glob.glob(os.path.join(examples, "models", "*.mlir")) +
                glob.glob(os.path.join(examples, "models", "*.json")))
clusters = sorted(glob.glob(os.path.join(examples, "clusters", "*.json")))
problems, planned, unfit = [], 0, 0
for model in models:
    for cluster in clusters:
        pair = f"{os.path.basename(model)} on {os.path.basename(cluster)}"
        run = subprocess.run([het_plan, "--cluster", cluster, "--model", model, "--top", "3"],
                             capture_output=True, text=True, timeout=600)
        out = run.stdout + run.stderr
        baselines = re.findall(r"^  (.*): [0-9.]+ (?:us|ms|s)\b", out.split("compared with")[-1],
                               re.M) if "compared with" in out else []
        if run.returncode == 0:
            planned += 1
            scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
            times = [float(t) * scale[u] for t, u in
                     re.findall(r"^plan \d+: iteration ([0-9.]+) (us|ms|s)\b", out, re.M)]
            if not times:
                problems.append(f"{pair}: exit 0 but no plan listed")
            elif times != sorted(times):
                problems.append(f"{pair}: plans listed out of order: {times}")
            for name, ratio in re.findall(r"^  (.*): [0-9.]+ (?:us|ms|s), chosen plan is ([0-9.]+)x faster",
                                          out, re.M):
                if float(ratio) < 1.0:
                    problems.append(f"{pair}: '{name}' is faster than the chosen plan "
                                    f"({ratio}x)")
        elif run.returncode == 3 and "does not fit" in out:
            unfit += 1
            if baselines:
                problems.append(f"{pair}: no plan fits, but baselines run: {baselines}")
        else:
            first = next((l for l in out.splitlines() if "no plan" in l or "error" in l), "")
            problems.append(f"{pair}: exit {run.returncode}: {first}")
for p in problems:
    print("PROBLEM:", p)
print(f"{len(models) * len(clusters)} model-cluster pairs: {planned} planned, {unfit} fit nowhere "
      f"(no baseline either), {len(problems)} problems")
sys.exit(1 if problems else 0)
