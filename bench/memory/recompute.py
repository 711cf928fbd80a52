#!/usr/bin/env python3
"""Activation recomputation: what it saves and what it costs (not a test).

    python bench/memory/recompute.py [--steps N] [--rounds R] [--threads T]

The 12-block GPT of bench/precision (d 256, 4 heads, seq 128, batch 8,
vocab 4096, Adam) built with --recompute none, selective and full, and its
PyTorch twin (bench/codegen/gpt_torch.py) without and with
torch.utils.checkpoint around each block, in the same run on the same
machine. For each: the median step time over R alternating rounds, the
peak resident set (the kernel's accounting of that one process, wait4),
for het the peak of the buffers it held (its "memory:" line: parameters,
gradients, Adam's moments, activations, temporaries), and the bytes the forward keeps for the backward as het-recompute
counts them (its remark at compile time). Every het build's loss trace is
compared with the none build's: recomputation must not change one bit.
Prints a Markdown table for docs/memory.md.
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "codegen"))
from bench import GPT_SIZES, make_gpt, run_measured  # noqa: E402

MODES = ["none", "selective", "full"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--torch-python", default=sys.executable)
    a = p.parse_args()
    compiler = os.path.join(a.build, "bin", "het-compile")
    work = tempfile.mkdtemp(prefix="het-recompute-bench-")
    gpt = make_gpt(12, work)
    kept, exes, buffers = {}, {}, {}
    for mode in MODES:
        exes[mode] = os.path.join(work, f"gpt12.{mode}")
        done = subprocess.run([compiler, gpt, "--optimizer", "adam", "--lr", "0.001",
                               "--recompute", mode, "-o", exes[mode]],
                              capture_output=True, text=True, check=True)
        m = re.search(r"keeps (\d+) bytes for the backward \((\d+) without", done.stderr)
        kept[mode] = int(m.group(1)) if m else None
        if m:
            kept["none"] = int(m.group(2))

    def het(mode):
        rc, out, peak = run_measured([exes[mode], "--steps", str(a.steps), "--threads", str(a.threads),
                                      "--seed", "2"])
        if rc != 0:
            sys.exit(f"recompute bench: {exes[mode]} failed (exit {rc})")
        m = re.search(r"\((\d+) steps of batch \d+ in (\S+) s", out)
        losses = re.findall(r"^step \d+ loss (\S+)", out, re.M)
        buffers.setdefault(mode, float(re.search(r"memory: peak (\S+) MiB of buffers", out).group(1)))
        return 1000.0 * float(m.group(2)) / int(m.group(1)), peak, losses

    def torch(checkpoint):
        cmd = [a.torch_python, os.path.join(ROOT, "bench", "codegen", "gpt_torch.py"), "12",
               str(a.steps), str(a.threads), *GPT_SIZES] + (["--checkpoint"] if checkpoint else [])
        rc, out, peak = run_measured(cmd)
        if rc != 0:
            sys.exit(f"recompute bench: {' '.join(cmd)} failed (exit {rc})")
        return float(re.search(r" ms (\S+)", out).group(1)), peak

    times = {k: [] for k in MODES + ["torch", "torch checkpoint"]}
    peaks = {k: [] for k in times}
    traces = {}
    for _ in range(a.rounds):
        for mode in MODES:
            ms, peak, losses = het(mode)
            times[mode].append(ms)
            peaks[mode].append(peak)
            traces.setdefault(mode, losses)
        for name, checkpoint in (("torch", False), ("torch checkpoint", True)):
            ms, peak = torch(checkpoint)
            times[name].append(ms)
            peaks[name].append(peak)
    for mode in MODES:
        if traces[mode] != traces["none"]:
            sys.exit(f"recompute bench: --recompute {mode} changed the loss trace")

    import torch as t  # for the version only
    print(f"{time.strftime('%Y-%m-%d')}, {platform.node()} ({os.cpu_count()} cores), "
          f"{a.threads} threads, PyTorch {t.__version__}; median of {a.rounds} rounds of {a.steps} steps; "
          "loss traces of every het build identical")
    print()
    print("| build | step ms | vs its none | peak resident MiB | peak of het's buffers MiB | kept for the backward MiB |")
    print("|---|---|---|---|---|---|")
    base = statistics.median(times["none"])
    tbase = statistics.median(times["torch"])
    for name in MODES + ["torch", "torch checkpoint"]:
        ms = statistics.median(times[name])
        ratio = ms / (tbase if name.startswith("torch") else base)
        keep = f"{kept[name] / 2**20:.1f}" if name in kept and kept[name] is not None else "-"
        label = f"het --recompute {name}" if name in MODES else (
            "PyTorch" if name == "torch" else "PyTorch, checkpoint per block")
        held = f"{buffers[name]:.1f}" if name in buffers else "-"
        print(f"| {label} | {ms:.0f} | {ratio:.2f}x | {statistics.median(peaks[name]):.0f} | {held} | {keep} |")


if __name__ == "__main__":
    main()
