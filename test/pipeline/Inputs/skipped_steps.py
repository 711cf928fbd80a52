"""Checks that every rank of a pipeline skipped the same steps under loss
scaling, and the same as a reference run (one rank with the same
per-layer formats).

Reads het-run's merged stdout (or a single rank's): each rank prints
"rank R: step S skipped: inf/NaN gradients in the job, loss scale xF" when
the job-wide found-inf made it keep its parameters and back the scale
off. Requires every rank 0..N-1 to list the same steps as rank 0 of the
reference, and at least one skipped step (a run that never overflows
tests nothing).

usage: skipped_steps.py REFERENCE.out RUN.out --ranks N"""
import argparse
import re
import sys

p = argparse.ArgumentParser()
p.add_argument("reference")
p.add_argument("run")
p.add_argument("--ranks", type=int, required=True)
a = p.parse_args()

LINE = re.compile(r"rank (\d+): step (\d+) skipped: inf/NaN gradients in the job, loss scale x([0-9.e+-]+)")


def skipped(path):
    steps = {}
    for line in open(path):
        m = LINE.search(line)
        if m:
            steps.setdefault(int(m.group(1)), []).append((int(m.group(2)), float(m.group(3))))
    return steps


reference = skipped(a.reference).get(0, [])
if not reference:
    sys.exit(f"{a.reference}: no skipped step: the run never overflowed, so it shows nothing")
run = skipped(a.run)
for rank in range(a.ranks):
    if run.get(rank, []) != reference:
        sys.exit(f"{a.run}: rank {rank} skipped {run.get(rank, [])}, the reference {reference}")
extra = sorted(set(run) - set(range(a.ranks)))
if extra:
    sys.exit(f"{a.run}: unexpected ranks {extra}")
print(f"every one of {a.ranks} ranks skipped steps {' '.join(str(s) for s, _ in reference)} as the reference did")
