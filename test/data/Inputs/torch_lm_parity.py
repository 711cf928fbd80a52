#!/usr/bin/env python3
"""Trains the PyTorch module het.export imported on the windows a het run
logged (--log-samples) and compares the losses step by step.

    torch_lm_parity.py MODULE.py:FACTORY TRAIN.bin SAMPLES.log HET.out
        --batch B --window T --steps N --lr LR [--tolerance R]

The module starts from the same weights (the factory seeds them, as het.export
did), takes each step's windows from the token file in the logged order,
trains with torch.optim.Adam at LR on the mean next-token cross-entropy, and
every step's loss must be within R (relative) of het's.
"""
import argparse
import importlib.util
import json
import os
import re
import sys

import numpy as np
import torch


def factory(spec):
    path, name = spec.rsplit(":", 1)
    module_spec = importlib.util.spec_from_file_location("lm_model", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("tokens")
    p.add_argument("samples")
    p.add_argument("het")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--window", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--tolerance", type=float, default=1e-4)
    a = p.parse_args()
    dtype = "uint16"
    if os.path.exists(a.tokens + ".json"):
        dtype = json.load(open(a.tokens + ".json"))["dtype"]
    tokens = np.fromfile(a.tokens, dtype=dtype).astype(np.int64)
    starts = {}
    for line in open(a.samples):
        w = line.split()
        starts[int(w[3])] = (int(w[1]), int(w[5]))
    # A single rank's "step N loss X", or a pipeline's "[rank R] step N loss X".
    het = {int(s): float(v) for s, v in
           re.findall(r"^(?:\[rank \d+\] )?step (\d+) loss (\S+)", open(a.het).read(), re.M)}
    torch.manual_seed(0)
    model = factory(a.model)()
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=a.lr)
    worst = 0.0
    for step in range(a.steps):
        ids = [starts[step * a.batch + b][1] for b in range(a.batch)]
        if any(starts[step * a.batch + b][0] != step for b in range(a.batch)):
            sys.exit(f"{a.samples}: the samples of step {step} were logged at another step")
        x = torch.tensor(np.stack([tokens[s:s + a.window] for s in ids]))
        y = torch.tensor(np.stack([tokens[s + 1:s + a.window + 1] for s in ids]))
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step not in het:
            sys.exit(f"{a.het}: no loss for step {step}")
        rel = abs(het[step] - loss.item()) / abs(loss.item())
        worst = max(worst, rel)
        if rel > a.tolerance:
            sys.exit(f"step {step}: het {het[step]:.7g}, PyTorch {loss.item():.7g} (relative {rel:.3g})")
    print(f"{a.steps} steps match PyTorch, max relative difference {worst:.2g}")


if __name__ == "__main__":
    main()
