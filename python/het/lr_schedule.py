"""The learning-rate schedule of het's executables (lib/Runtime/LearningRate.cpp),
for PyTorch runs that must train at the same rates: a linear warm-up, then a
cosine or linear decay to a floor (nanoGPT's get_lr).

    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_at(lr, s, "cosine", warmup=10, decay=300) / lr)
"""
import math


def lr_at(lr, step, kind="constant", warmup=0, decay=0, min_lr=0.0):
    """The rate of step `step` (0-based) of a run whose --lr is `lr`."""
    if step < warmup:
        return lr * (step + 1) / (warmup + 1)
    if kind == "constant":
        return lr
    if step >= decay:
        return min_lr
    ratio = (step - warmup) / (decay - warmup)
    coefficient = 0.5 * (1.0 + math.cos(math.pi * ratio)) if kind == "cosine" else 1.0 - ratio
    return min_lr + coefficient * (lr - min_lr)


def add_arguments(parser):
    """The executables' schedule options, for a script that mirrors a run."""
    parser.add_argument("--lr-schedule", default="constant", choices=["constant", "cosine", "linear"])
    parser.add_argument("--warmup-steps", type=int, default=0)
    parser.add_argument("--decay-steps", type=int, default=0, help="default: --steps")
    parser.add_argument("--min-lr", type=float, default=0.0)


def scheduler(optimizer, args, lr, steps):
    """A LambdaLR stepping `optimizer` through the rates het's executable uses."""
    import torch

    decay = args.decay_steps or steps
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_at(lr, s, args.lr_schedule, args.warmup_steps, decay, args.min_lr) / lr)
