"""Checks that two .npz files hold the same arrays, bit for bit.

usage: same_arrays.py A.npz B.npz"""
import sys

import numpy as np

a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
if not a.files:
    sys.exit(f"{sys.argv[1]} holds no arrays: nothing to compare")
if sorted(a.files) != sorted(b.files):
    sys.exit(f"different arrays: {sorted(a.files)} vs {sorted(b.files)}")
for name in a.files:
    x, y = a[name], b[name]
    if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
        diff = np.max(np.abs(x.astype(np.float64) - y.astype(np.float64))) if x.shape == y.shape else "shape"
        sys.exit(f"'{name}' differs (max abs difference {diff})")
print(f"{len(a.files)} arrays identical")
