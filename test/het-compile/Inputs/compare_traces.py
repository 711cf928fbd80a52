#!/usr/bin/env python3
"""Compares two `step <i> loss <v>` traces (het-eval's and a compiled model's).

Prints the largest relative difference; exits 1 when a step is missing or a
difference exceeds --tolerance.
"""
import argparse
import re
import sys


def trace(path):
    steps = {}
    with open(path) as f:
        for line in f:
            # Pipelines print through het-run, which prefixes "[rank k] ".
            m = re.search(r"(?:^|\] )step (\d+) loss (\S+)", line)
            if m:
                steps[int(m.group(1))] = float(m.group(2))
    return steps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("reference")
    p.add_argument("candidate")
    p.add_argument("--tolerance", type=float, default=1e-4)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--first", type=int, default=0, help="the first step compared (a resumed run's)")
    a = p.parse_args()
    ref, got = trace(a.reference), trace(a.candidate)
    worst = 0.0
    for i in range(a.first, a.steps):
        if i not in ref or i not in got:
            print(f"step {i} missing from {'reference' if i not in ref else 'candidate'}")
            return 1
        err = abs(got[i] - ref[i]) / max(abs(ref[i]), 1e-30)
        worst = max(worst, err)
        if err > a.tolerance:
            print(f"step {i}: loss {got[i]!r} vs reference {ref[i]!r} (relative {err:.3g})")
            return 1
    print(f"{a.steps - a.first} steps match, max relative error {worst:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
