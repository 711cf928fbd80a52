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
import os
import re
import sys

import numpy as np
import torch

# The PyTorch side of bench/llm: the module, token files, logged windows and
# the update, shared with the benchmark.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench", "llm"))
import torch_train  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("tokens")
    p.add_argument("samples")
    p.add_argument("het")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--window", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--tolerance", type=float, default=1e-4)
    torch_train.add_update_arguments(p)
    p.set_defaults(optimizer="adam")
    a = p.parse_args()
    tokens = np.asarray(torch_train.token_file(a.tokens)).astype(np.int64)
    starts = torch_train.logged_windows(a.samples)
    # A single rank's "step N loss X", or a pipeline's "[rank R] step N loss X".
    het = {int(s): float(v) for s, v in
           re.findall(r"^(?:\[rank \d+\] )?step (\d+) loss (\S+)", open(a.het).read(), re.M)}
    torch.manual_seed(0)
    model = torch_train.factory(a.model)()
    model.train()
    optimizer, scheduler = torch_train.make_optimizer(model, a, a.steps)
    worst = 0.0
    for step in range(a.steps):
        ids = [starts[step * a.batch + b][1] for b in range(a.batch)]
        if any(starts[step * a.batch + b][0] != step for b in range(a.batch)):
            sys.exit(f"{a.samples}: the samples of step {step} were logged at another step")
        x = torch.tensor(np.stack([tokens[s:s + a.window] for s in ids]))
        y = torch.tensor(np.stack([tokens[s + 1:s + a.window + 1] for s in ids]))
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        torch_train.update(model, optimizer, scheduler, loss, a)
        if step not in het:
            sys.exit(f"{a.het}: no loss for step {step}")
        rel = abs(het[step] - loss.item()) / abs(loss.item())
        worst = max(worst, rel)
        if rel > a.tolerance:
            sys.exit(f"step {step}: het {het[step]:.7g}, PyTorch {loss.item():.7g} (relative {rel:.3g})")
    print(f"{a.steps} steps match PyTorch, max relative difference {worst:.2g}")


if __name__ == "__main__":
    main()
