"""Compares the final loss of training runs: the mean loss of the last N
steps (the runs see the same batches in the same order, so the mean only
smooths out which batch the last step drew).

With --must-differ, each run's loss trace must also differ from the
reference's somewhere (a compressed run identical to the uncompressed one
means the compression never happened).

usage: final_loss.py --last N --tolerance T [--must-differ] REFERENCE.out RUN.out [RUN.out...]"""
import argparse
import re
import sys


def trace(path):
    losses = {}
    for line in open(path):
        m = re.search(r"(?:^|\] )step (\d+) loss (\S+)", line)
        if m:
            losses[int(m.group(1))] = float(m.group(2))
    return losses


def final(path, last):
    losses = trace(path)
    steps = sorted(losses)
    if len(steps) < last:
        sys.exit(f"{path}: {len(steps)} steps, fewer than {last}")
    return sum(losses[s] for s in steps[-last:]) / last


p = argparse.ArgumentParser()
p.add_argument("--last", type=int, default=100)
p.add_argument("--tolerance", type=float, default=0.02)
p.add_argument("--must-differ", action="store_true")
p.add_argument("reference")
p.add_argument("runs", nargs="+")
a = p.parse_args()
ref = final(a.reference, a.last)
print(f"{a.reference}: final loss {ref:.6g}")
status = 0
for run in a.runs:
    got = final(run, a.last)
    rel = (got - ref) / ref
    print(f"{run}: final loss {got:.6g} ({rel:+.2%})")
    if abs(rel) > a.tolerance:
        print(f"{run}: differs from the uncompressed run by more than {a.tolerance:.0%}")
        status = 1
    if a.must_differ and trace(run) == trace(a.reference):
        print(f"{run}: the same loss trace as {a.reference}")
        status = 1
print("within tolerance" if status == 0 else "out of tolerance")
sys.exit(status)
