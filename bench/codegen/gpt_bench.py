#!/usr/bin/env python3
"""het-compile on transformers: compile time against depth, and training
speed and memory against PyTorch eager, in one run.

    .venv/bin/python bench/codegen/gpt_bench.py [--blocks 6,12,24,48] [--train-blocks 12]
                                                [--threads 1,2] [--steps 6] [--rounds 2]
                                                [--whole-blocks 6,12] [--compile-rounds 3]
                                                [--pipeline-blocks 12]

The model is examples/models/make_gpt.py at --batch 8 --seq 128 --vocab 4096
--dim 256 --heads 4 with Adam (lr 0.001); its PyTorch twin is gpt_torch.py
(same layout: separate q/k/v projections, tanh GELU, causal attention via
scaled_dot_product_attention).

Compile time: het-compile end to end with an empty object cache (--no-cache)
for each depth (the median of --compile-rounds compiles, depths
interleaved so that the machine's drift touches all alike), then the same
compile with the cache filled, and -- the peer -- the step compiled as one
function (--outline-layers=false, as before layers were outlined) at
--whole-blocks. At --pipeline-blocks the same model is also compiled as a
2x2 pipeline (test/pipeline/Inputs/gpt-2x2.plan.json with the layers
halved), once with both stages on cpu.onednn and once as planned there
(the second stage on cpu.mlir, whose kernels are generated: code the
one-kind build does not have). Training: samples/s of both sides
(first step excluded) and the peak resident memory of both processes,
alternating het and PyTorch for --rounds rounds; het also as compiled with
--fuse-attention=false (attention as matmul, softmax, matmul: the [B, H,
T, T] probabilities kept for the backward), the A/B of fused attention, and
with --tuning-db from het-tune kernels run here first (each dense layer's
matrix products on oneDNN or OpenBLAS, whichever it measured faster at the
--threads counts). To see an AVX2 machine's kernels on an AVX-512 one, run
with DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell
MKL_ENABLE_INSTRUCTIONS=AVX2 (PyTorch's MKL) set. Not a test: numbers
depend on the machine and its load; ratios come from the same run.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
# Peak RSS of one child and the benchmark GPT, shared with bench.py.
from bench import GPT_SIZES as SIZES, make_gpt as make_model, run_measured  # noqa: E402


def compile_model(compiler, model, out, extra, report=None):
    """Compiles; returns seconds, peak MiB and the distinct-function count.
    With `report` (a pattern), also the first line of het-compile's output
    it matches."""
    start = time.perf_counter()
    rc, text, peak = run_measured([compiler, model, "--optimizer", "adam", "--lr", "0.001",
                                   "--time", "-o", out, *extra], with_stderr=True)
    seconds = time.perf_counter() - start
    if rc != 0:
        sys.exit(f"gpt_bench: het-compile failed:\n{text}")
    m = re.search(r"outlined as calls to (\d+) distinct functions", text)
    result = seconds, peak, int(m.group(1)) if m else None
    if report is None:
        return result
    found = re.search(report + r"[^\n]*", text)
    return result, found.group(0) if found else text.strip()


def pipeline_plan(blocks, one_kind, directory):
    """The 2x2 GPT plan of test/pipeline with the model's layers (embedding,
    blocks, head) halved between the stages."""
    with open(os.path.join(ROOT, "test", "pipeline", "Inputs", "gpt-2x2.plan.json")) as f:
        plan = json.load(f)
    layers = blocks + 2
    plan["stages"][0]["layers"] = [0, layers // 2]
    plan["stages"][1]["layers"] = [layers // 2, layers]
    if one_kind:
        plan["groups"][1]["kind"], plan["groups"][1]["arch"] = "cpu.onednn", "onednn"
    path = os.path.join(directory, f"gpt{blocks}-{'one' if one_kind else 'two'}-kind.plan.json")
    with open(path, "w") as f:
        json.dump(plan, f)
    return path


def compile_pipelines(compiler, blocks, rounds, directory):
    model = make_model(blocks, directory)
    exe = os.path.join(directory, "pipe")
    plans = {"one step": [], "2x2, one kind": [], "2x2, two kinds": []}
    extra = {"one step": [],
             "2x2, one kind": ["--plan", pipeline_plan(blocks, True, directory), "--micro-batches", "2"],
             "2x2, two kinds": ["--plan", pipeline_plan(blocks, False, directory), "--micro-batches", "2"]}
    counts = {}
    for _ in range(rounds):
        for name in plans:
            seconds, _, count = compile_model(compiler, model, exe, ["--no-cache", *extra[name]])
            plans[name].append(seconds)
            counts[name] = count
    print(f"\n{blocks} blocks as a pipeline (medians of {rounds} cold compiles)")
    base = statistics.median(plans["one step"])
    for name, times in plans.items():
        median = statistics.median(times)
        print(f"{name:>16}  {median:>6.2f} s  {median / base:>5.2f}x  "
              f"{counts[name]:>3} distinct functions", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", default="6,12,24,48")
    p.add_argument("--whole-blocks", default="6,12",
                   help="depths also compiled as one function (slow: minutes at 12)")
    p.add_argument("--train-blocks", type=int, default=12)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--compile-rounds", type=int, default=3)
    p.add_argument("--pipeline-blocks", type=int, default=12,
                   help="depth also compiled as a 2x2 pipeline (0: none)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--torch-python", default=sys.executable)
    a = p.parse_args()
    compiler = os.path.join(a.build, "bin", "het-compile")
    whole = {int(b) for b in a.whole_blocks.split(",") if b}

    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        print(f"het-compile, GPT (make_gpt.py {' '.join(SIZES)}), Adam, {os.cpu_count()} cores")
        print(f"{'blocks':>6}  {'cold s':>7}  {'cached s':>8}  {'one function s':>14}  "
              f"{'distinct functions':>18}  {'peak MiB':>8}")
        depths = [int(b) for b in a.blocks.split(",")]
        models = {blocks: make_model(blocks, tmp) for blocks in depths}
        cold = {blocks: [] for blocks in depths}
        peaks, functions = {}, {}
        for _ in range(a.compile_rounds):
            for blocks in depths:
                seconds, peak, count = compile_model(compiler, models[blocks],
                                                     os.path.join(tmp, f"gpt{blocks}"), ["--no-cache"])
                cold[blocks].append(seconds)
                peaks[blocks] = max(peaks.get(blocks, 0), peak)
                functions[blocks] = count
        for blocks in depths:
            model, exe = models[blocks], os.path.join(tmp, f"gpt{blocks}")
            compile_model(compiler, model, exe, ["--cache-dir", cache])  # fills the cache
            cached, _, _ = compile_model(compiler, model, exe, ["--cache-dir", cache])
            one = "-"
            if blocks in whole:
                seconds, _, _ = compile_model(compiler, model, exe + ".whole",
                                              ["--no-cache", "--outline-layers=false"])
                one = f"{seconds:.1f}"
            print(f"{blocks:>6}  {statistics.median(cold[blocks]):>7.2f}  {cached:>8.1f}  {one:>14}  "
                  f"{functions[blocks]:>18}  {peaks[blocks]:>8.0f}", flush=True)
        first, last = depths[0], depths[-1]
        if len(depths) > 1:
            print(f"{last} blocks / {first} blocks: "
                  f"{statistics.median(cold[last]) / statistics.median(cold[first]):.2f}x "
                  f"(medians of {a.compile_rounds}: "
                  + ", ".join(f"{b}: " + "/".join(f"{t:.2f}" for t in cold[b]) for b in depths) + ")")
        if a.pipeline_blocks:
            compile_pipelines(compiler, a.pipeline_blocks, a.compile_rounds, tmp)

        if not a.threads:
            return
        model = make_model(a.train_blocks, tmp)
        exe = os.path.join(tmp, "train")
        compile_model(compiler, model, exe, ["--cache-dir", cache])
        unfused_exe = exe + ".unfused"
        compile_model(compiler, model, unfused_exe, ["--cache-dir", cache, "--fuse-attention=false"])
        # Tuned: each dense layer's matrix products on the engine het-tune
        # kernels measures faster here, at the thread counts trained below.
        tuned_exe, tuning_db = exe + ".tuned", os.path.join(tmp, "tune.db")
        tuner = subprocess.run([os.path.join(a.build, "bin", "het-tune"), "kernels", model,
                                "--db", tuning_db, "--threads", a.threads, "--rounds", "3"],
                               capture_output=True, text=True)
        if tuner.returncode != 0:
            sys.exit(f"gpt_bench: het-tune kernels failed:\n{tuner.stdout}{tuner.stderr}")
        _, chosen = compile_model(compiler, model, tuned_exe,
                                  ["--cache-dir", cache, "--tuning-db", tuning_db],
                                  report=r"\d+ matrix products")
        print(f"\nhet-tune kernels at {a.threads} threads: {chosen}")
        print(f"\ntraining, {a.train_blocks} blocks, {a.steps} steps (first excluded), "
              f"{a.rounds} rounds alternating het, het with attention unfused, het tuned "
              f"and PyTorch")
        print(f"{'threads':>7}  {'het samples/s':>13}  {'unfused':>13}  {'tuned':>13}  "
              f"{'torch samples/s':>15}  {'het/torch':>9}  {'tuned/torch':>11}  "
              f"{'het peak MiB':>12}  {'unfused MiB':>11}  {'torch peak MiB':>14}")
        version = "?"

        def run_het(executable, threads):
            rc, out, peak = run_measured([executable, "--steps", str(a.steps), "--threads",
                                          str(threads), "--print-every", str(a.steps)],
                                         with_stderr=True)
            m = re.search(r"throughput (\S+) samples/s", out)
            if rc != 0 or not m:
                sys.exit(f"gpt_bench: {executable} failed:\n{out}")
            return float(m.group(1)), peak

        for threads in [int(t) for t in a.threads.split(",")]:
            het, unfused, tuned, torch, het_peak, unfused_peak, torch_peak = [], [], [], [], 0, 0, 0
            for _ in range(a.rounds):
                speed, peak = run_het(exe, threads)
                het.append(speed)
                het_peak = max(het_peak, peak)
                speed, peak = run_het(unfused_exe, threads)
                unfused.append(speed)
                unfused_peak = max(unfused_peak, peak)
                tuned.append(run_het(tuned_exe, threads)[0])
                rc, out, peak = run_measured([a.torch_python, os.path.join(HERE, "gpt_torch.py"),
                                              str(a.train_blocks), str(a.steps), str(threads),
                                              *SIZES], with_stderr=True)
                m = re.search(r"samples/s (\S+) ms \S+ torch (\S+)", out)
                if rc != 0 or not m:
                    sys.exit(f"gpt_bench: the PyTorch twin failed:\n{out}")
                torch.append(float(m.group(1)))
                version = m.group(2)
                torch_peak = max(torch_peak, peak)
            ratios = " / ".join(f"{h / t:.2f}x" for h, t in zip(het, torch))
            tuned_ratios = " / ".join(f"{h / t:.2f}x" for h, t in zip(tuned, torch))
            print(f"{threads:>7}  {' / '.join(f'{h:.1f}' for h in het):>13}  "
                  f"{' / '.join(f'{u:.1f}' for u in unfused):>13}  "
                  f"{' / '.join(f'{u:.1f}' for u in tuned):>13}  "
                  f"{' / '.join(f'{t:.1f}' for t in torch):>15}  {ratios:>9}  {tuned_ratios:>11}  "
                  f"{het_peak:>12.0f}  {unfused_peak:>11.0f}  {torch_peak:>14.0f}", flush=True)
        print(f"\nPyTorch {version}")


if __name__ == "__main__":
    main()
