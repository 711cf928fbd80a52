#!/usr/bin/env python3
"""Mixed precision on the CPU, in one run: het-compile --precision bf16
against het's own f32 step and against PyTorch's torch.autocast(bfloat16).

    .venv/bin/python bench/precision/bench.py [--threads 1,2] [--steps N] [--rounds R]

Models (same shapes, batch, optimizer and threads on every side):
  MLP  784-1024-1024-10, ReLU, batch 256, SGD     (bench/codegen/mlp_784.mlir,
       PyTorch: bench/codegen/torch_train.py)
  GPT  12 blocks, d 256, 4 heads, seq 128, batch 8, vocab 4096, Adam
       (examples/models/make_gpt.py; PyTorch: bench/codegen/gpt_torch.py)
For each thread count: samples/s of het f32, het bf16, PyTorch f32 and
PyTorch autocast bf16 (the median of --rounds alternating rounds, the
first step of each run excluded), the ratios het bf16 / het f32 and het
bf16 / PyTorch bf16, and the peak resident memory of each process. First
it prints this core's f32 FMA and bf16 dot-product peaks (het-dot-peak),
the bars for what a bf16 step can gain. Not a test: numbers depend on the
machine and its load; ratios come from the same run.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "codegen"))
from bench import GPT_SIZES, make_gpt, run_het, run_measured  # noqa: E402



def compile_model(compiler, model, out, extra):
    rc, text, _ = run_measured([compiler, model, "-o", out, *extra], with_stderr=True)
    if rc != 0:
        sys.exit(f"bench: het-compile failed:\n{text}")


def run_torch(cmd):
    rc, out, peak = run_measured(cmd)
    m = re.search(r"samples/s (\S+) ms (\S+) torch (\S+)", out)
    if rc != 0 or not m:
        sys.exit(f"bench: {' '.join(cmd)} failed:\n{out}")
    return float(m.group(1)), peak, m.group(3)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--torch-python", default=sys.executable)
    a = p.parse_args()
    compiler = os.path.join(a.build, "bin", "het-compile")
    peak = subprocess.run([os.path.join(a.build, "bin", "het-dot-peak")], capture_output=True,
                          text=True).stdout
    print(peak.strip())
    work = tempfile.mkdtemp(prefix="het-precision-bench-")
    gpt = make_gpt(12, work)
    models = {
        "MLP": (os.path.join(ROOT, "bench", "codegen", "mlp_784.mlir"), ["--lr", "0.1"],
                lambda threads, bf16: [a.torch_python, os.path.join(ROOT, "bench", "codegen", "torch_train.py"),
                                       "MLP", str(a.steps), str(threads), "cpu"] + (["bf16"] if bf16 else [])),
        "GPT": (gpt, ["--optimizer", "adam", "--lr", "0.001"],
                lambda threads, bf16: [a.torch_python, os.path.join(ROOT, "bench", "codegen", "gpt_torch.py"),
                                       "12", str(a.steps), str(threads), *GPT_SIZES] + (["--bf16"] if bf16 else [])),
    }
    exes = {}
    builds = {"fp32": ["--precision", "fp32"], "bf16": ["--precision", "bf16"],
              "bf16 native": ["--precision", "bf16", "--bf16-products", "native"]}
    for name, (model, opts, _) in models.items():
        for label, flags in builds.items():
            exes[name, label] = os.path.join(work, f"{name.lower()}-{label.replace(' ', '-')}")
            compile_model(compiler, model, exes[name, label], opts + flags)
    version = None
    print(f"\n{a.steps} steps, median of {a.rounds} alternating rounds; samples/s (peak MiB)")
    print("het bf16: --bf16-products auto (what the oneDNN rates above decide: native where its "
          "bf16 matmul is the faster); native: oneDNN's bf16 kernels forced")
    print(f"{'model':5} {'thr':>3} {'het f32':>16} {'het bf16':>16} {'het bf16 native':>16} {'torch f32':>16} "
          f"{'torch bf16':>16} {'het bf16/f32':>13} {'het/torch bf16':>15}")
    for threads in (int(t) for t in a.threads.split(",")):
        for name, (_, _, torch_cmd) in models.items():
            runs = {k: [] for k in ("het f32", "het bf16", "het bf16 native", "torch f32", "torch bf16")}
            memory = {}
            for _ in range(a.rounds):
                for label in builds:
                    samples, _, mib = run_het(exes[name, label], a.steps, threads, with_memory=True)
                    key = "het f32" if label == "fp32" else "het " + label
                    runs[key].append(samples)
                    memory[key] = mib
                for bf16 in (False, True):
                    samples, mib, version = run_torch(torch_cmd(threads, bf16))
                    key = "torch bf16" if bf16 else "torch f32"
                    runs[key].append(samples)
                    memory[key] = mib
            median = {k: statistics.median(v) for k, v in runs.items()}
            cells = " ".join(f"{median[k]:>9.1f} ({memory[k]:>4.0f})" for k in runs)
            print(f"{name:5} {threads:>3} {cells} {median['het bf16'] / median['het f32']:>12.2f}x "
                  f"{median['het bf16'] / median['torch bf16']:>14.2f}x", flush=True)
    print(f"\nPyTorch {version}")


if __name__ == "__main__":
    main()
