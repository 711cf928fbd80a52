#!/usr/bin/env python3
"""A het-compiled training step of a tiny LLaMA vs PyTorch eager, in one run.

    HET_TOOLS_DIR=build/bin PYTHONPATH=python .venv/bin/python bench/models/llama_step.py \\
        [--model hf|hand] [--batch 8] [--seq 64] [--steps 30] [--threads 1]

Models: `hf` is transformers' LlamaForCausalLM (examples/torch/hf_tiny.py:
2 layers, hidden 64, 4 heads, 2 key/value heads, vocab 128); `hand` the
hand-written decoder of examples/torch/llama_style.py. Both sides train
the same weights on the same token batch with SGD (lr 0.1, cross-entropy
over every position) on the same number of threads; het imports the model
(het.from_torch), het-compile builds the step (oneDNN kernels), the
executable trains it (`--load` gives it PyTorch's weights and the batch).
Prints samples/s (sequences/s) of both and their ratio, excluding the
first (warm-up) step on both sides, the compile time, and the machine.
Not a test: numbers depend on the machine and its load; the ratio comes
from the same run.
"""
import argparse
import datetime
import os
import platform
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "torch"))
sys.path.insert(0, HERE)


def build(name):
    if name == "hf":
        import hf_tiny
        return hf_tiny.llama()
    import llama_style
    return llama_style.decoder()


def torch_samples_per_second(torch, model, ids, target, steps, lr):
    import torch.nn.functional as F

    opt = torch.optim.SGD(model.parameters(), lr=lr)
    times, losses = [], []
    for _ in range(steps):
        start = time.perf_counter()
        opt.zero_grad()
        logits = model(ids)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
        losses.append(loss.item())
    timed = times[1:]
    return ids.shape[0] * len(timed) / sum(timed), losses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=["hf", "hand"], default="hf")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()

    import numpy as np
    import torch

    from compiled_step import compile_and_train
    from het import from_torch

    torch.set_num_threads(args.threads)
    model = build(args.model)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 128, (args.batch, args.seq), generator=gen)
    target = torch.randint(0, 128, (args.batch, args.seq), generator=gen)
    initial = {k: v.clone() for k, v in model.state_dict().items()}

    prog = from_torch(model, (ids,), loss="cross_entropy", target=target)
    feed = {k: np.asarray(v) for k, v in prog.initial_values().items()}
    feed["input"], feed["target"] = ids.numpy(), target.numpy()
    out, compile_s = compile_and_train(prog, feed, args.steps, args.threads, args.lr, "llama")
    m = re.search(r"throughput (\S+) samples/s", out)
    het_sps = float(m.group(1))
    het_losses = [float(v) for v in re.findall(r"step \d+ loss (\S+)", out)]

    model.load_state_dict(initial)
    torch_sps, torch_losses = torch_samples_per_second(torch, model, ids, target, args.steps, args.lr)
    drift = max(abs(a - b) / abs(b) for a, b in zip(het_losses, torch_losses))

    print(f"tiny LLaMA ({args.model}) training step, batch {args.batch} x {args.seq} tokens, SGD, "
          f"{args.threads} thread(s), {args.steps} steps (first excluded)")
    print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, "
          f"{datetime.date.today().isoformat()}, torch {torch.__version__}")
    print(f"het-compile: {compile_s:.1f} s")
    print(f"het (compiled, oneDNN)   {het_sps:10.1f} samples/s")
    print(f"PyTorch eager            {torch_sps:10.1f} samples/s")
    print(f"het / PyTorch            {het_sps / torch_sps:10.2f}x")
    print(f"loss traces agree within {drift:.2g} (relative) over {args.steps} steps")


if __name__ == "__main__":
    main()
