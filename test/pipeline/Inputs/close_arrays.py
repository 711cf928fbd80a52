"""Checks that two .npz files hold the same arrays within a relative
tolerance (different summation orders, e.g. tensor parallelism).

usage: close_arrays.py A.npz B.npz [--tolerance T] [--names N1,N2,...]

--names compares only those arrays (each must be in both files), e.g. the
parameters and state an executable saves against all of het-eval's results."""
import argparse
import sys

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("a")
p.add_argument("b")
p.add_argument("--tolerance", type=float, default=1e-5)
p.add_argument("--names", help="comma-separated names to compare (default: all, same sets)")
args = p.parse_args()
a, b = np.load(args.a), np.load(args.b)
names = args.names.split(",") if args.names else a.files
if args.names:
    missing = [n for n in names if n not in a.files or n not in b.files]
    if missing:
        sys.exit(f"not in both files: {', '.join(missing)}")
elif sorted(a.files) != sorted(b.files):
    sys.exit(f"different arrays: {sorted(a.files)} vs {sorted(b.files)}")
for name in names:
    x, y = a[name].astype(np.float64), b[name].astype(np.float64)
    if x.shape != y.shape:
        sys.exit(f"'{name}': shapes {x.shape} and {y.shape}")
    scale = max(np.max(np.abs(x)), 1e-30)
    worst = np.max(np.abs(x - y)) / scale if x.size else 0.0
    if worst > args.tolerance:
        sys.exit(f"'{name}' differs by {worst:.3g} (relative to its largest value)")
print(f"{len(names)} arrays agree")
