#!/usr/bin/env python3
"""Feeds het-compile mechanically damaged copies of the example models.

Reuses the damage of test/robustness/damage_inputs.py (truncation, deleted,
duplicated or swapped tokens, changed numbers, replaced identifiers). Each
damaged model must either compile to an object file or be rejected with an
`error:` and a non-zero exit; a signal, a hang or an internal error
(`LLVM ERROR`, an assertion, a stack dump) fails. Models that compile are
linked and trained for one step, which must succeed or stop with an error.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "robustness"))
from damage_inputs import classify as run, damage  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--het-compile", required=True)
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("inputs", nargs="+")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sources = [(p, open(p).read()) for p in args.inputs]
    work = tempfile.mkdtemp(prefix="het-compile-damage-")
    compiled = rejected = 0
    failures = []
    for i in range(args.cases):
        path, text = sources[i % len(sources)]
        kind, damaged = damage(text, rng)
        case = os.path.join(work, f"case{i:03d}-{kind}.mlir")
        with open(case, "w") as f:
            f.write(damaged)
        exe = case + ".exe"
        verdict = run([args.het_compile, case, "-O0", "-o", exe], args.timeout)
        if verdict is None:
            compiled += 1
            verdict = run([exe, "--steps", "1"], args.timeout)
        elif verdict == "rejected":
            rejected += 1
        if verdict not in (None, "rejected"):
            failures.append((case, verdict))
            continue
        for leftover in (case, exe):
            if os.path.exists(leftover):
                os.remove(leftover)
    print(f"damaged models: {args.cases} cases, {rejected} rejected with a diagnostic, "
          f"{compiled} compiled and trained one step, {len(failures)} failures")
    for case, why in failures:
        print(f"FAIL {case}: {why}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
