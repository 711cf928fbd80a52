#!/usr/bin/env python3
"""Writes scikit-learn's bundled 8x8 handwritten digits as .npz train/test sets.

The data ship inside the scikit-learn wheel (no download). Pixels 0..16 are
scaled to [0, 1] float32 (`x`, shape [N, 64]); labels are int64 (`y`).
A stratified 80/20 split with a fixed seed: 1437 training, 360 test images.

    python scripts/make_digits.py OUT_DIR   # writes digits_train.npz, digits_test.npz
"""
import os
import sys

import numpy as np


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "data"
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        sys.exit("make_digits: scikit-learn is not installed (scripts/setup.sh installs it)")
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.2, random_state=0, stratify=y)
    os.makedirs(out, exist_ok=True)
    np.savez(os.path.join(out, "digits_train.npz"), x=x_train, y=y_train)
    np.savez(os.path.join(out, "digits_test.npz"), x=x_test, y=y_test)
    print(f"make_digits: {len(y_train)} training and {len(y_test)} test images in {out}/")


if __name__ == "__main__":
    main()
