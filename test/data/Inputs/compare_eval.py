#!/usr/bin/env python3
"""Compares the "eval after step N: loss X" lines of two runs (a single rank
and a pipeline): the same steps, losses within --tolerance (relative), and
the loss lower at the last validation than at the first.

usage: compare_eval.py A.out B.out --tolerance R"""
import argparse
import re
import sys

p = argparse.ArgumentParser()
p.add_argument("a")
p.add_argument("b")
p.add_argument("--tolerance", type=float, required=True)
args = p.parse_args()
LINE = re.compile(r"eval after step (\d+): loss ([0-9.eE+-]+)")


def evals(path):
    return {int(s): float(v) for s, v in LINE.findall(open(path).read())}


a, b = evals(args.a), evals(args.b)
if not a or sorted(a) != sorted(b):
    sys.exit(f"different validations: {sorted(a)} vs {sorted(b)}")
worst = max(abs(a[s] - b[s]) / abs(a[s]) for s in a)
if worst > args.tolerance:
    sys.exit(f"validation losses differ by {worst:.3g} (tolerance {args.tolerance}): {a} vs {b}")
steps = sorted(a)
if not a[steps[-1]] < a[steps[0]]:
    sys.exit(f"the validation loss did not fall: {a}")
print(f"{len(a)} validations match, and the loss fell (worst {worst:.3g})")
