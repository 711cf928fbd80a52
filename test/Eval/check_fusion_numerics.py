"""Every function in the given .mlir files computes the same values before
and after het-fuse: each split (`// -----`) is fused, then both versions of
every function run in the reference evaluator on the same random inputs, in
f64, and their results must agree within --rtol (relative to each result's
largest magnitude)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return done.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--rtol", type=float, default=1e-12)
    parser.add_argument("--fuse-options", default="")
    args = parser.parse_args()
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.files:
            splits = open(path).read().split("// -----")
            for index, text in enumerate(splits):
                original = os.path.join(tmp, f"s{index}.mlir")
                fused = os.path.join(tmp, f"s{index}.fused.mlir")
                open(original, "w").write(text)
                option = f"--het-fuse={args.fuse_options}" if args.fuse_options else "--het-fuse"
                run(["het-opt", original, option, "-o", fused])
                for name in re.findall(r"^func\.func @(\w+)\(", text, re.MULTILINE):
                    outs = []
                    for version in (original, fused):
                        out = version + f".{name}.npz"
                        run(["het-eval", version, "--function", name, "--random-inputs", "5",
                             "--precision", "f64", "-o", out])
                        outs.append(np.load(out))
                    for key in outs[0].files:
                        a, b = outs[0][key], outs[1][key]
                        scale = max(np.abs(a).max(initial=0), 1e-30)
                        diff = np.abs(a - b).max(initial=0) / scale
                        if diff > args.rtol:
                            sys.exit(f"{path} @{name} result {key}: fused differs by {diff:.3e}")
                    checked += 1
                    print(f"@{name}: fused == unfused")
    print(f"{checked} functions agree")


if __name__ == "__main__":
    main()
