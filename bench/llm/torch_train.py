#!/usr/bin/env python3
"""The PyTorch side of the language-model benchmark (bench/llm/run.py): the
same module, initial parameters, data order, optimizer and schedule as a het
run, in PyTorch eager, timed and measured the same way.

    torch_train.py MODULE.py:FACTORY --tokens train.bin --samples het.samples
        --batch B --window T --steps N --lr LR [--optimizer adamw --weight-decay W
        --betas B1,B2 --clip-grad-norm C --lr-schedule cosine --warmup-steps W
        --min-lr X] [--val val.bin --eval-every K --eval-windows E]
        [--threads P] [--attention eager|sdpa] --json OUT.json

- Parameters: the factory seeds them (torch.manual_seed(0)), as het.export
  did when it wrote the .npz het starts from.
- Data: each step's windows are the ones het logged (`--log-samples`: step,
  sample, window start), so both sides see the same tokens in the same order.
- Update: torch.optim.AdamW (or Adam), torch.nn.utils.clip_grad_norm_ and a
  LambdaLR over python/het/lr_schedule.py, het's executable's schedule.
- Validation: the mean next-token cross-entropy over the first E windows of
  the validation file in order (window k = tokens[kT, kT+T]), as het's
  `--eval` computes it, after every K steps and after the last.
- Timing: wall time of each step; tokens/s over the steps after the first
  (het's executable reports the same span). Peak resident memory of the
  process (ru_maxrss).

Writes the losses, validation losses, step times and memory to --json.
"""
import argparse
import importlib.util
import json
import os
import resource
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from het import lr_schedule  # noqa: E402


def factory(spec):
    path, name = spec.rsplit(":", 1)
    module_spec = importlib.util.spec_from_file_location("lm_model", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)


def token_file(path):
    dtype = "uint16"
    if os.path.exists(path + ".json"):
        dtype = json.load(open(path + ".json"))["dtype"]
    return np.memmap(path, dtype=dtype, mode="r")


def logged_windows(path):
    """{sample: (step, window start)} from het's --log-samples file."""
    starts = {}
    for line in open(path):
        w = line.split()
        starts[int(w[3])] = (int(w[1]), int(w[5]))
    return starts


def add_update_arguments(p):
    """het-compile's update options and the executable's schedule."""
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--optimizer", default="adamw", choices=["adam", "adamw"])
    p.add_argument("--weight-decay", type=float, default=None, help="default: PyTorch's (adamw 0.01, adam 0)")
    p.add_argument("--betas", default="0.9,0.999")
    p.add_argument("--clip-grad-norm", type=float, default=0.0)
    lr_schedule.add_arguments(p)


def make_optimizer(model, a, steps):
    """torch.optim.AdamW or Adam as het-compile's options say, and the LambdaLR
    of the executable's schedule."""
    betas = tuple(float(b) for b in a.betas.split(","))
    if a.optimizer == "adamw":
        decay = 0.01 if a.weight_decay is None else a.weight_decay
        optimizer = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=betas, weight_decay=decay)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=a.lr, betas=betas, weight_decay=a.weight_decay or 0.0)
    return optimizer, lr_schedule.scheduler(optimizer, a, a.lr, steps)


def update(model, optimizer, scheduler, loss, a):
    """One step's backward and update, clipping as --clip-grad-norm says."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if a.clip_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip_grad_norm)
    optimizer.step()
    scheduler.step()


def validate(model, tokens, window, windows, batch):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for first in range(0, windows, batch):
            ks = range(first, min(first + batch, windows))
            x = torch.tensor(np.stack([tokens[k * window:k * window + window] for k in ks]).astype(np.int64))
            y = torch.tensor(np.stack([tokens[k * window + 1:k * window + window + 1] for k in ks]).astype(np.int64))
            logits = model(x).double()
            total += torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                                                       reduction="sum").item()
            count += y.numel()
    model.train()
    return total / count


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--tokens", required=True)
    p.add_argument("--samples", required=True, help="het's --log-samples file")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--window", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    add_update_arguments(p)
    p.add_argument("--val")
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--eval-windows", type=int, default=0)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--attention", default="eager", choices=["eager", "sdpa"],
                   help="transformers' attention: eager (the module het imported) or sdpa")
    p.add_argument("--bf16", action="store_true",
                   help="forward and loss under torch.autocast('cpu', dtype=torch.bfloat16)")
    p.add_argument("--json", required=True)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    tokens = token_file(a.tokens)
    starts = logged_windows(a.samples)
    torch.manual_seed(0)
    model = factory(a.model)()
    if a.attention != "eager":
        model.model.config._attn_implementation = a.attention
    model.train()
    optimizer, scheduler = make_optimizer(model, a, a.steps)
    val = token_file(a.val) if a.val else None
    val_windows = 0
    if val is not None:
        val_windows = (len(val) - 1) // a.window
        if a.eval_windows:
            val_windows = min(val_windows, a.eval_windows)
    losses, seconds, evals = [], [], []
    for step in range(a.steps):
        ids = []
        for b in range(a.batch):
            g = step * a.batch + b
            if g not in starts or starts[g][0] != step:
                sys.exit(f"{a.samples}: no window of sample {g} at step {step}")
            ids.append(starts[g][1])
        x = torch.tensor(np.stack([tokens[s:s + a.window] for s in ids]).astype(np.int64))
        y = torch.tensor(np.stack([tokens[s + 1:s + a.window + 1] for s in ids]).astype(np.int64))
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        update(model, optimizer, scheduler, loss, a)
        seconds.append(time.perf_counter() - t0)
        losses.append(loss.item())
        if val is not None and ((a.eval_every and (step + 1) % a.eval_every == 0) or step + 1 == a.steps):
            evals.append({"step": step + 1, "loss": validate(model, val, a.window, val_windows, a.batch)})
    timed = seconds[1:] or seconds
    result = {
        "system": f"PyTorch {torch.__version__} eager ({a.attention} attention"
                  + (", autocast bf16)" if a.bf16 else ")"),
        "threads": torch.get_num_threads(),
        "losses": losses,
        "eval": evals,
        "eval_windows": val_windows,
        "step_seconds": seconds,
        "tokens_per_second": a.batch * a.window * len(timed) / sum(timed),
        "peak_resident_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "parameters": sum(t.numel() for t in model.parameters()),
    }
    with open(a.json, "w") as f:
        json.dump(result, f, indent=1)
    print(f"PyTorch: {a.steps} steps, final loss {losses[-1]:.4f}, "
          f"{result['tokens_per_second']:.1f} tokens/s, peak {result['peak_resident_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
