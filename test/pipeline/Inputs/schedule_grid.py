"""Compiles and runs a grid of pipelines with HETRT_COMM_TRACE set, one
trace directory each, for check_deadlock.py: the six-layer skip model
(Inputs/skip_mlp.mlir, 60 samples per step) cut into 2-5 stages (stages
alternate the cpu.onednn and cpu.mlir groups), 1-6 micro-batches, 1F1B and
GPipe; stages of different replica counts and a stage of both kinds with
uneven shares; and the GPT example as 2 stages x tensor parallelism 2.

usage: schedule_grid.py OUT_DIR   (het-compile and het-run on PATH)
Prints each configuration and its trace directory; stops at the first
failure with the tool's output."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", "..", ".."))
cluster = os.path.join(here, "local-four.json")
make_plan = os.path.join(root, "utils", "make_plan.py")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def run(args, **kw):
    proc = subprocess.run(args, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(args)}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


def configuration(name, model, stages, micro_batches, global_batch, schedule, ranks, extra=()):
    plan = os.path.join(out, name + ".plan.json")
    run([sys.executable, make_plan, cluster, plan, "--global-batch", str(global_batch),
         "--micro-batches", str(micro_batches)] + [a for s in stages for a in ("--stage", s)])
    exe = os.path.join(out, name)
    run(["het-compile", model, "--plan", plan, "--schedule", schedule, "-o", exe] + list(extra))
    traces = os.path.join(out, name + ".traces")
    os.makedirs(traces, exist_ok=True)
    env = dict(os.environ, HETRT_COMM_TRACE=traces)
    run(["het-run", "-n", str(ranks), "--timeout-ms", "20000", "--job-timeout-s", "120", exe,
         "--steps", "2"], env=env)
    print(f"{name}: {len(stages)} stages, {micro_batches} micro-batches, {schedule} -> {traces}",
          flush=True)


skip = os.path.join(here, "skip_mlp.mlir")
cuts = {2: [0, 3, 6], 3: [0, 2, 4, 6], 4: [0, 2, 3, 5, 6], 5: [0, 1, 2, 3, 5, 6]}
for count, cut in cuts.items():
    stages = [f"{cut[i]}:{cut[i + 1]}={'onednn' if i % 2 == 0 else 'mlir'}:1" for i in range(count)]
    for micro_batches in range(1, 7):
        for schedule in ("1f1b", "gpipe"):
            configuration(f"skip-{count}x1-m{micro_batches}-{schedule}", skip, stages, micro_batches, 60,
                          schedule, count)
# Stages of different widths (sends split by sample range, receives from
# several replicas) and a stage of both kinds with uneven shares.
configuration("skip-1-2-1-m2", skip, ["0:2=onednn:1", "2:4=mlir:2", "4:6=onednn:1"], 2, 60, "1f1b", 4)
configuration("skip-2-1-m3", skip, ["0:3=onednn:2", "3:6=mlir:1"], 3, 60, "1f1b", 3)
configuration("skip-mixed-m2", skip, ["0:3=onednn:1@20,mlir:1@10", "3:6=mlir:1"], 2, 60, "gpipe", 3)
# Tensor-parallel collectives inside the phases (GPT: heads, MLP, vocabulary).
configuration("gpt-2tp2-m2", os.path.join(root, "examples", "models", "gpt.mlir"),
              ["0:2=onednn:1/2", "2:4=mlir:1/2"], 2, 16, "1f1b", 4, ["--optimizer", "adam", "--lr", "0.001"])
