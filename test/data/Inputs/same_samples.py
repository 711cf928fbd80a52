#!/usr/bin/env python3
"""Compares --log-samples logs: each argument is a log, or several joined by '+'
(one run in parts). Every run must train on each of its samples once (a
sample read by several ranks of one step, each for the inputs its stage
needs, counts once) and all runs on the same samples with the same windows.
"""
import sys


def samples(spec):
    seen = {}
    steps = {}
    for path in spec.split("+"):
        for line in open(path):
            words = line.split()
            step, sample, start = int(words[1]), int(words[3]), int(words[5])
            if sample in seen and steps[sample] != step:
                sys.exit(f"{path}: sample {sample} trained at steps {steps[sample]} and {step}")
            if sample in seen and seen[sample] != start:
                sys.exit(f"{path}: sample {sample} read at window starts {seen[sample]} and {start}")
            seen[sample] = start
            steps[sample] = step
    return seen


def main():
    runs = [samples(spec) for spec in sys.argv[1:]]
    first = runs[0]
    for spec, run in zip(sys.argv[2:], runs[1:]):
        if run != first:
            missing = sorted(set(first) - set(run))[:5]
            extra = sorted(set(run) - set(first))[:5]
            moved = [g for g in first if g in run and run[g] != first[g]][:5]
            sys.exit(f"{spec}: other samples than {sys.argv[1]}: missing {missing}, extra {extra}, "
                     f"other windows for {moved}")
    if sorted(first) != list(range(len(first))):
        sys.exit(f"{sys.argv[1]}: the samples are not 0..{len(first) - 1}")
    print(f"{len(first)} samples, each once, the same windows in every log")


if __name__ == "__main__":
    main()
