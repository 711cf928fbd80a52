#!/usr/bin/env python3
"""het-compile on transformers: compile time against depth, and training
speed and memory against PyTorch eager, in one run.

    .venv/bin/python bench/codegen/gpt_bench.py [--blocks 6,12,24,48] [--train-blocks 12]
                                                [--threads 1,2] [--steps 6] [--rounds 2]
                                                [--whole-blocks 6,12]

The model is examples/models/make_gpt.py at --batch 8 --seq 128 --vocab 4096
--dim 256 --heads 4 with Adam (lr 0.001); its PyTorch twin is gpt_torch.py
(same layout: separate q/k/v projections, tanh GELU, causal attention via
scaled_dot_product_attention).

Compile time: het-compile end to end with an empty object cache (--no-cache)
for each depth, then the same compile with the cache filled, and -- the peer
-- the step compiled as one function (--outline-layers=false, as before
layers were outlined) at --whole-blocks. Training: samples/s of both sides
(first step excluded) and the peak resident memory of both processes,
alternating het and PyTorch for --rounds rounds. Not a test: numbers
depend on the machine and its load; ratios come from the same run.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from bench import run_measured  # noqa: E402  (peak RSS of one child, shared with bench.py)
SIZES = ["--batch", "8", "--seq", "128", "--vocab", "4096", "--dim", "256", "--heads", "4"]


def make_model(blocks, directory):
    path = os.path.join(directory, f"gpt{blocks}.mlir")
    with open(path, "w") as f:
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "models", "make_gpt.py"),
                        *SIZES, "--blocks", str(blocks)], stdout=f, check=True)
    return path


def compile_model(compiler, model, out, extra):
    start = time.perf_counter()
    rc, text, peak = run_measured([compiler, model, "--optimizer", "adam", "--lr", "0.001",
                                   "--time", "-o", out, *extra], with_stderr=True)
    seconds = time.perf_counter() - start
    if rc != 0:
        sys.exit(f"gpt_bench: het-compile failed:\n{text}")
    m = re.search(r"outlined as calls to (\d+) distinct functions", text)
    return seconds, peak, int(m.group(1)) if m else None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", default="6,12,24,48")
    p.add_argument("--whole-blocks", default="6,12",
                   help="depths also compiled as one function (slow: minutes at 12)")
    p.add_argument("--train-blocks", type=int, default=12)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--rounds", type=int, default=2)
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
        for blocks in [int(b) for b in a.blocks.split(",")]:
            model = make_model(blocks, tmp)
            exe = os.path.join(tmp, f"gpt{blocks}")
            cold, peak, functions = compile_model(compiler, model, exe, ["--no-cache"])
            compile_model(compiler, model, exe, ["--cache-dir", cache])  # fills the cache
            cached, _, _ = compile_model(compiler, model, exe, ["--cache-dir", cache])
            one = "-"
            if blocks in whole:
                seconds, _, _ = compile_model(compiler, model, exe + ".whole",
                                              ["--no-cache", "--outline-layers=false"])
                one = f"{seconds:.1f}"
            print(f"{blocks:>6}  {cold:>7.1f}  {cached:>8.1f}  {one:>14}  {functions:>18}  "
                  f"{peak:>8.0f}", flush=True)

        model = make_model(a.train_blocks, tmp)
        exe = os.path.join(tmp, "train")
        compile_model(compiler, model, exe, ["--cache-dir", cache])
        print(f"\ntraining, {a.train_blocks} blocks, {a.steps} steps (first excluded), "
              f"{a.rounds} rounds alternating het and PyTorch")
        print(f"{'threads':>7}  {'het samples/s':>13}  {'torch samples/s':>15}  {'het/torch':>9}  "
              f"{'het peak MiB':>12}  {'torch peak MiB':>14}")
        version = "?"
        for threads in [int(t) for t in a.threads.split(",")]:
            het, torch, het_peak, torch_peak = [], [], 0, 0
            for _ in range(a.rounds):
                rc, out, peak = run_measured([exe, "--steps", str(a.steps), "--threads", str(threads),
                                              "--print-every", str(a.steps)], with_stderr=True)
                m = re.search(r"throughput (\S+) samples/s", out)
                if rc != 0 or not m:
                    sys.exit(f"gpt_bench: {exe} failed:\n{out}")
                het.append(float(m.group(1)))
                het_peak = max(het_peak, peak)
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
            print(f"{threads:>7}  {' / '.join(f'{h:.1f}' for h in het):>13}  "
                  f"{' / '.join(f'{t:.1f}' for t in torch):>15}  {ratios:>9}  {het_peak:>12.0f}  "
                  f"{torch_peak:>14.0f}", flush=True)
        print(f"\nPyTorch {version}")


if __name__ == "__main__":
    main()
