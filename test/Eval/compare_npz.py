"""Compares two .npz files array by array: same keys, shapes, and values
within a relative tolerance (relative to the larger magnitude of the array,
so elements near zero are not judged on their own)."""
import sys

import numpy as np


def main():
    a_path, b_path = sys.argv[1], sys.argv[2]
    rtol = float(sys.argv[sys.argv.index("--rtol") + 1])
    a, b = np.load(a_path), np.load(b_path)
    if sorted(a.files) != sorted(b.files):
        sys.exit(f"keys differ: {sorted(a.files)} vs {sorted(b.files)}")
    worst, where = 0.0, ""
    for key in a.files:
        x, y = a[key].astype(np.float64), b[key].astype(np.float64)
        if x.shape != y.shape:
            sys.exit(f"{key}: shapes {x.shape} vs {y.shape}")
        scale = max(np.abs(x).max(initial=0), np.abs(y).max(initial=0), 1e-30)
        diff = np.abs(x - y).max(initial=0) / scale
        if diff >= worst:
            worst, where = diff, key
    if worst > rtol:
        sys.exit(f"max relative difference {worst:.3e} in '{where}' exceeds {rtol}")
    print(f"{len(a.files)} arrays agree, max relative difference {worst:.3e} ('{where}')")


if __name__ == "__main__":
    main()
