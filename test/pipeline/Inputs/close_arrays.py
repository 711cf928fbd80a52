"""Checks that two .npz files hold the same arrays within a relative
tolerance (different summation orders, e.g. tensor parallelism).

usage: close_arrays.py A.npz B.npz [--tolerance T]"""
import argparse
import sys

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("a")
p.add_argument("b")
p.add_argument("--tolerance", type=float, default=1e-5)
args = p.parse_args()
a, b = np.load(args.a), np.load(args.b)
if sorted(a.files) != sorted(b.files):
    sys.exit(f"different arrays: {sorted(a.files)} vs {sorted(b.files)}")
for name in a.files:
    x, y = a[name].astype(np.float64), b[name].astype(np.float64)
    if x.shape != y.shape:
        sys.exit(f"'{name}': shapes {x.shape} and {y.shape}")
    scale = max(np.max(np.abs(x)), 1e-30)
    worst = np.max(np.abs(x - y)) / scale if x.size else 0.0
    if worst > args.tolerance:
        sys.exit(f"'{name}' differs by {worst:.3g} (relative to its largest value)")
print(f"{len(a.files)} arrays agree")
