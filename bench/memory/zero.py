#!/usr/bin/env python3
"""Sharded data parallelism: what ZeRO-1/2/3 save and cost (not a test).

    python bench/memory/zero.py [--blocks B] [--steps N] [--rounds R]

The GPT of bench/precision (d 256, 4 heads, seq 128, vocab 4096, Adam;
B blocks, default 12) as one pipeline stage over both cpu.onednn devices of
examples/clusters/local-two-kinds.json (2 replicas, global batch 16 in 2
micro-batches), built with het-compile --zero 0, 1, 2 and 3 and run with
het-run in the same session on the same machine. For each: the median
iteration time over R alternating rounds, each rank's peak of buffers and
resident set (its "memory:" line), the bytes of parameters, gradients and
optimizer state it holds (its "sharded training state" line), and the
largest relative difference of its loss trace from --zero 0's (the peer).
Prints a Markdown table for docs/memory.md.
"""
import argparse
import json
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
from bench import make_gpt  # noqa: E402

LEVELS = [0, 1, 2, 3]


def run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def losses(text):
    return {int(m.group(1)): float(m.group(2))
            for m in re.finditer(r"\] step (\d+) loss ([0-9.e+-]+)", text)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=12)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = p.parse_args()
    bin_dir = os.path.join(a.build, "bin")
    cluster = os.path.join(ROOT, "examples", "clusters", "local-two-kinds.json")
    work = tempfile.mkdtemp(prefix="het-zero-bench-")
    gpt = make_gpt(a.blocks, work)
    shown = run([os.path.join(bin_dir, "het-plan"), "--model", gpt, "--cluster", cluster,
                 "--show-model"])
    layers = int(re.search(r"^model [^:]*: (\d+) layers", shown, re.M).group(1))
    plan = os.path.join(work, "plan.json")
    run([sys.executable, os.path.join(ROOT, "utils", "make_plan.py"), cluster, plan,
         "--global-batch", "16", "--micro-batches", "2", "--stage", f"0:{layers}=onednn:2"])
    exes = {}
    for level in LEVELS:
        exes[level] = os.path.join(work, f"gpt.zero{level}")
        run([os.path.join(bin_dir, "het-compile"), gpt, "--optimizer", "adam", "--lr", "0.001",
             "--plan", plan, "--zero", str(level), "-o", exes[level]])
    times = {level: [] for level in LEVELS}
    outputs = {}
    for _ in range(a.rounds):
        for level in LEVELS:
            text = run([os.path.join(bin_dir, "het-run"), "-n", "2", "--timeout-ms", "600000",
                        exes[level], "--steps", str(a.steps), "--print-every", "1"])
            outputs[level] = text
            times[level].append(float(re.search(r"iteration time ([0-9.]+) ms", text).group(1)))
    reference = losses(outputs[0])
    print(f"GPT {a.blocks} blocks (d 256, seq 128, vocab 4096, Adam), one stage over 2 "
          f"cpu.onednn replicas, global batch 16 in 2 micro-batches; {a.steps} steps, median of "
          f"{a.rounds} rounds; {time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores\n")
    print("| --zero | iteration | max relative loss difference from --zero 0 | parameters held | "
          "gradients held | optimizer state held | buffer peak per rank | resident peak per rank |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for level in LEVELS:
        text = outputs[level]
        mine = losses(text)
        worst = max(abs(mine[s] - v) / abs(v) for s, v in reference.items())
        held = re.search(r"rank 0: sharded training state held .*?: parameters (\d+) of (\d+) bytes "
                         r"\(([0-9.]+)%\), gradients (\d+) of (\d+) bytes \(([0-9.]+)%\), "
                         r"optimizer state (\d+) of (\d+) bytes \(([0-9.]+)%\)", text)
        memory = re.findall(r"rank (\d): memory: peak ([0-9.]+) MiB of buffers, peak resident "
                            r"([0-9.]+) MiB", text)
        buffers = "/".join(m[1] for m in sorted(memory))
        resident = "/".join(m[2] for m in sorted(memory))
        if held:
            mib = lambda b: f"{int(b) / 2**20:.1f} MiB"  # noqa: E731
            parts = [f"{mib(held.group(1 + 3 * k))} ({held.group(3 + 3 * k)} %)" for k in range(3)]
        else:
            parts = ["all"] * 3
        print(f"| {level} | {statistics.median(times[level]):.1f} ms | {worst:.1e} | "
              f"{' | '.join(parts)} | {buffers} MiB | {resident} MiB |")
    print(f"\n(work files in {work}; plan {json.load(open(plan))['stages'][0]['name']})")


if __name__ == "__main__":
    main()
