#!/usr/bin/env python3
"""Trains the PyTorch module het.export imported on the windows a het run
logged (--log-samples) and compares the losses step by step.

    torch_lm_parity.py MODULE.py:FACTORY TRAIN.bin SAMPLES.log HET.out
        --batch B --window T --steps N --lr LR [--tolerance R]
        [--optimizer adam|adamw --weight-decay W --betas B1,B2 --clip-grad-norm C
         --lr-schedule cosine --warmup-steps W --decay-steps D --min-lr X]

The module starts from the same weights (the factory seeds them, as het.export
did), takes each step's windows from the token file in the logged order,
trains with torch.optim.Adam (or AdamW) at LR on the mean next-token
cross-entropy, clipping with torch.nn.utils.clip_grad_norm_ and scheduling
the rate with LambdaLR as het's options say, and every step's loss must be
within R (relative) of het's.
"""
import argparse
import importlib.util
import json
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from het import lr_schedule  # noqa: E402


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
    p.add_argument("--optimizer", default="adam", choices=["adam", "adamw"])
    p.add_argument("--weight-decay", type=float, default=None)
    p.add_argument("--betas", default="0.9,0.999")
    p.add_argument("--clip-grad-norm", type=float, default=0.0)
    lr_schedule.add_arguments(p)
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
    betas = tuple(float(b) for b in a.betas.split(","))
    if a.optimizer == "adamw":
        decay = 0.01 if a.weight_decay is None else a.weight_decay
        optimizer = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=betas, weight_decay=decay)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=a.lr, betas=betas,
                                     weight_decay=a.weight_decay or 0.0)
    scheduler = lr_schedule.scheduler(optimizer, a, a.lr, a.steps)
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
        if a.clip_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip_grad_norm)
        optimizer.step()
        scheduler.step()
        if step not in het:
            sys.exit(f"{a.het}: no loss for step {step}")
        rel = abs(het[step] - loss.item()) / abs(loss.item())
        worst = max(worst, rel)
        if rel > a.tolerance:
            sys.exit(f"step {step}: het {het[step]:.7g}, PyTorch {loss.item():.7g} (relative {rel:.3g})")
    print(f"{a.steps} steps match PyTorch, max relative difference {worst:.2g}")


if __name__ == "__main__":
    main()
