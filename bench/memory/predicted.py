#!/usr/bin/env python3
"""The planner's memory model against measurement, rank by rank (not a test).

    python bench/memory/predicted.py [--build DIR] [--only REGEX]

For each configuration (a model, a plan on this machine's two CPU kinds,
recomputation, sharding, format) het-plan --evaluate predicts each stage's memory per
device (parameters x state bytes + in-flight micro-batches x stashed
activations), het-compile builds the plan and het-run trains it 4 steps;
each rank reports the peak of the buffers it held ("rank R: memory: peak X
MiB of buffers"). Prints a Markdown table of predicted, measured and
measured/predicted per rank, for docs/memory.md.
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "examples", "clusters", "local-two-kinds.json")
MODELS = os.path.join(ROOT, "examples", "models")

# A GPT whose attention probabilities ([B, H, T, T]) outweigh its other
# activations: make_gpt.py's layout at sequence 256 with 4 heads.
LONG_GPT = ("gpt-seq256.mlir", ["--seq", "256", "--dim", "64", "--heads", "4"])
BF16 = ["--precision", "bf16"]

# name, model (a file of examples/models, or (file, make_gpt.py arguments)), global batch,
# micro-batches, stages (make_plan.py), fields set in every stage of the plan
# (recompute, zero), extra het-compile flags
CONFIGS = [
    ("MLP, 1 rank", "mlp.mlir", 256, 1, ["0:3=onednn:1"], None, []),
    ("MLP, 2 stages", "mlp.mlir", 256, 2, ["0:2=onednn:1", "2:3=mlir:1"], None, []),
    ("CNN, 1 rank", "cnn.mlir", 32, 1, ["0:4=onednn:1"], None, []),
    ("CNN, 2 stages", "cnn.mlir", 32, 2, ["0:2=onednn:1", "2:4=mlir:1"], None, []),
    ("GPT, 1 rank", "gpt.mlir", 32, 1, ["0:4=onednn:1"], None, []),
    ("GPT, 1 rank, full recomputation", "gpt.mlir", 32, 1, ["0:4=onednn:1"], {"recompute": "full"}, []),
    ("GPT, 1 rank, selective recomputation", "gpt.mlir", 32, 1, ["0:4=onednn:1"],
     {"recompute": "selective"}, []),
    ("GPT, 2 stages, selective recomputation", "gpt.mlir", 32, 4, ["0:2=onednn:1", "2:4=mlir:1"],
     {"recompute": "selective"}, []),
    ("GPT seq 256, 1 rank on cpu.mlir, selective recomputation", LONG_GPT, 8, 1, ["0:4=mlir:1"],
     {"recompute": "selective"}, []),
    ("GPT, 2 replicas x TP 2, selective recomputation", "gpt.mlir", 32, 2,
     ["0:4=onednn:1,mlir:1/2"], {"recompute": "selective"}, []),
    ("MLP, 1 rank, bf16", "mlp.mlir", 256, 1, ["0:3=onednn:1"], None, BF16),
    ("CNN, 1 rank, bf16", "cnn.mlir", 32, 1, ["0:4=onednn:1"], None, BF16),
    ("GPT, 1 rank, bf16", "gpt.mlir", 32, 1, ["0:4=onednn:1"], None, BF16),
    ("GPT, 2 stages, bf16", "gpt.mlir", 32, 4, ["0:2=onednn:1", "2:4=mlir:1"], None, BF16),
    ("GPT seq 256, 1 rank", LONG_GPT, 8, 1, ["0:4=onednn:1"], None, []),
    ("GPT seq 256, 1 rank on cpu.mlir", LONG_GPT, 8, 1, ["0:4=mlir:1"], None, []),
    ("GPT seq 256, 2 stages", LONG_GPT, 8, 2, ["0:2=onednn:1", "2:4=mlir:1"], None, []),
    ("GPT, 2 stages, 4 micro-batches", "gpt.mlir", 32, 4, ["0:2=onednn:1", "2:4=mlir:1"], None, []),
    ("GPT, 2 stages, full recomputation", "gpt.mlir", 32, 4, ["0:2=onednn:1", "2:4=mlir:1"], {"recompute": "full"}, []),
    ("GPT, 2 x 2 replicas", "gpt.mlir", 32, 2, ["0:2=onednn:2", "2:4=mlir:2"], None, []),
    ("GPT, 2 replicas", "gpt.mlir", 32, 2, ["0:4=onednn:2"], None, []),
    ("GPT, 2 replicas, ZeRO-1", "gpt.mlir", 32, 2, ["0:4=onednn:2"], {"zero": 1}, []),
    ("GPT, 2 replicas, ZeRO-2", "gpt.mlir", 32, 2, ["0:4=onednn:2"], {"zero": 2}, []),
    ("GPT, 2 replicas, ZeRO-3", "gpt.mlir", 32, 2, ["0:4=onednn:2"], {"zero": 3}, []),
    ("GPT, 2 x 2 replicas, ZeRO-3", "gpt.mlir", 32, 2, ["0:2=onednn:2", "2:4=mlir:2"],
     {"zero": 3}, []),
    ("GPT, TP 2", "gpt.mlir", 32, 2, ["0:4=onednn:1/2"], None, []),
    ("GPT, 2 stages x TP 2", "gpt.mlir", 32, 4, ["0:2=onednn:1/2", "2:4=mlir:1/2"], None, []),
    ("GPT, 2 replicas x TP 2", "gpt.mlir", 32, 2, ["0:4=onednn:1,mlir:1/2"], None, []),
    ("GPT, 2 replicas x TP 2, ZeRO-3", "gpt.mlir", 32, 2, ["0:4=onednn:1,mlir:1/2"], {"zero": 3}, []),
    ("GPT, 2 replicas x TP 2, ZeRO-2, full recomputation", "gpt.mlir", 32, 2,
     ["0:4=onednn:1,mlir:1/2"], {"zero": 2, "recompute": "full"}, []),
]


def stage_ranks(stage):
    """Ranks of a make_plan.py stage: its replicas times its tensor-parallel degree."""
    members, _, tp = stage.split("=")[1].partition("/")
    replicas = sum(int(m.split(":")[1].split("@")[0]) for m in members.split(","))
    return replicas * int(tp or 1)


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"memory bench: {' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--only", default="", help="the configurations whose name matches this regex")
    a = p.parse_args()
    binary = lambda name: os.path.join(a.build, "bin", name)
    work = tempfile.mkdtemp(prefix="het-memory-bench-")
    rows, uses_rows, worst = [], [], 0.0
    for k, (name, model, batch, micro, stages, fields, flags) in enumerate(CONFIGS):
        if a.only and not re.search(a.only, name):
            continue
        if isinstance(model, tuple):
            path = os.path.join(work, model[0])
            if not os.path.exists(path):
                with open(path, "w") as f:
                    f.write(run([sys.executable, os.path.join(MODELS, "make_gpt.py"), *model[1]]))
        else:
            path = os.path.join(MODELS, model)
        plan = os.path.join(work, f"{k}.plan.json")
        cmd = [sys.executable, os.path.join(ROOT, "utils", "make_plan.py"), CLUSTER, plan,
               "--global-batch", str(batch), "--micro-batches", str(micro)]
        for s in stages:
            cmd += ["--stage", s]
        run(cmd)
        if fields:
            with open(plan) as f:
                j = json.load(f)
            for s in j["stages"]:
                s.update(fields)
            with open(plan, "w") as f:
                json.dump(j, f)
        precision = flags[flags.index("--precision") + 1] if "--precision" in flags else "fp32"
        predicted = json.loads(run([binary("het-plan"), "--cluster", CLUSTER, "--model",
                                    path, "--evaluate", plan, "--json",
                                    "--precision", precision]))
        exe = os.path.join(work, f"{k}.exe")
        run([binary("het-compile"), path, "--optimizer", "adam",
             "--plan", plan, "-o", exe, *flags])
        ranks = sum(stage_ranks(s) for s in stages)
        out = run([binary("het-run"), "-n", str(ranks), "--timeout-ms", "120000", exe,
                   "--steps", "4", "--profile-memory"])
        uses = {int(r): dict((u, float(v)) for u, v in re.findall(r"([a-z][a-z ]+) (\S+) MiB \(", line))
                for r, line in re.findall(r"rank (\d+): memory: peak of buffers (.*)", out)}
        stage_of = {int(r): int(s) for r, s in re.findall(r"rank (\d+): stage s(\d+)", out)}
        measured = {int(r): float(m) for r, m in
                    re.findall(r"rank (\d+): memory: peak (\S+) MiB of buffers", out)}
        for rank in sorted(measured):
            stage = stage_of[rank]
            want = predicted["stages"][stage]["memory_bytes"] / 2**20
            ratio = measured[rank] / want
            worst = max(worst, abs(ratio - 1))
            rows.append(f"| {name} | {rank} (s{stage}) | {want:.3f} | {measured[rank]:.3f} | {ratio:.2f} |")
            # By use: the model's terms against --profile-memory's at the peak.
            m = predicted["stages"][stage]["memory"]
            u = uses.get(rank, {})
            got = lambda *names: sum(u.get(n, 0.0) for n in names)
            pairs = [("state", (m["parameters"] + m["gradients"] + m["optimizer_state"] + m["gradient_results"]),
                      got("parameters", "gradients", "optimizer state", "results of the running function")),
                     ("activations", m["activations"], got("activations kept for the backward")),
                     ("working set", m["working_set"], got("temporaries of the running function")),
                     ("data", m["batch_data"], got("batch data"))]
            uses_rows.append(f"| {name} | {rank} | " + " | ".join(
                f"{p / 2**20:.3f} / {q:.3f}" for _, p, q in pairs) + f" | {m['peak_phase']} |")
    print(f"{time.strftime('%Y-%m-%d')}, {platform.node()} ({os.cpu_count()} cores); Adam; "
          f"4 steps; predicted: het-plan --evaluate on local-two-kinds; measured: each rank's "
          f"peak of buffers")
    print()
    print("| configuration | rank | predicted MiB | measured MiB | measured / predicted |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print(f"worst: {100 * worst:.0f} % off")
    print()
    print("By use, predicted / measured MiB at the peak (measured: --profile-memory; state: "
          "parameters, gradients, a backward's gradient results, optimizer state):")
    print()
    print("| configuration | rank | state | activations | working set (temporaries) | batch data | "
          "predicted peak in |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(uses_rows))


if __name__ == "__main__":
    main()
