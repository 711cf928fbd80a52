#!/usr/bin/env python3
"""Feeds het-opt mechanically damaged copies of the example programs.

Each case takes one example and applies one damage: truncation, a deleted,
duplicated or swapped token, a changed number, or a replaced identifier or
keyword. het-opt must then either accept the program (some damage leaves it
valid) or reject it with an `error:` diagnostic and a non-zero exit. A signal
(crash), a hang (timeout), `LLVM ERROR`, an assertion or a stack dump is a
failure. Cases are reproducible from the seed; a failure prints the damaged
input's path so it can be replayed by hand.
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

TOKEN = re.compile(r'"[^"\n]*"|%[\w.#]+|@[\w.]+|#[\w.]+|[A-Za-z_][\w.]*|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|\S')
NUMBERS = ["0", "-1", "1", "3", "7", "65536", "-9223372036854775808",
           "99999999999999999999", "1.5", "-0.0", "1e308", "nan"]
WORDS = ["het.relu", "het.stage", "het.cluster", "tensor<4xf32>", "tensor<?x?xf32>",
         "tensor<*xf32>", "f64", "i1", "sum", "ring", "topk", "over", "to", "from",
         "replicas", "layers", "@s0", "@nowhere", "%arg0", "#het.device<cpu, \"\">",
         "het.layer", "{", "}", "(", ")", "[", "]", "<", ">", ":", ",", "->"]
BAD = ("LLVM ERROR", "Assertion", "Stack dump", "PLEASE submit a bug report")


def damage(text, rng):
    tokens = [(m.start(), m.end()) for m in TOKEN.finditer(text)]
    kind = rng.choice(["truncate", "delete", "duplicate", "swap", "number", "replace"])
    if kind == "truncate":
        cut = rng.randrange(len(text))
        return kind, text[:cut]
    s, e = rng.choice(tokens)
    if kind == "delete":
        return kind, text[:s] + text[e:]
    if kind == "duplicate":
        return kind, text[:e] + " " + text[s:e] + text[e:]
    if kind == "swap":
        s2, e2 = rng.choice(tokens)
        (a, b), (c, d) = sorted([(s, e), (s2, e2)])
        if b > c:
            return kind, text
        return kind, text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]
    if kind == "number":
        nums = [(a, b) for a, b in tokens if re.fullmatch(r"-?\d[\d.e+-]*", text[a:b])]
        if nums:
            s, e = rng.choice(nums)
        return kind, text[:s] + rng.choice(NUMBERS) + text[e:]
    return kind, text[:s] + rng.choice(WORDS) + text[e:]


def classify(cmd, timeout):
    """None when the command ran cleanly (exit 0), "rejected" when it failed
    with a diagnostic, otherwise the failure (a hang, a signal, an internal
    error, or a failure without a diagnostic)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout (hang): " + " ".join(cmd)
    out = r.stdout + r.stderr
    if r.returncode < 0:
        return f"killed by signal {-r.returncode}: " + " ".join(cmd)
    if any(b in out for b in BAD):
        return "internal error: " + next(b for b in BAD if b in out) + " in " + " ".join(cmd)
    if r.returncode != 0 and "error:" not in out:
        return f"exit {r.returncode} without a diagnostic: " + " ".join(cmd)
    return None if r.returncode == 0 else "rejected"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--het-opt", required=True)
    ap.add_argument("--het-eval", help="also run the training pipeline and one "
                    "evaluated step on every program that still verifies")
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--keep", help="directory for damaged inputs (default: temporary)")
    ap.add_argument("inputs", nargs="+")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    sources = [(p, open(p).read()) for p in args.inputs]
    workdir = args.keep or tempfile.mkdtemp(prefix="het-damage-")
    os.makedirs(workdir, exist_ok=True)
    accepted = rejected = 0
    failures = []
    trained = 0
    for i in range(args.cases):
        path, text = sources[i % len(sources)]
        kind, damaged = damage(text, rng)
        case = os.path.join(workdir, f"case{i:04d}-{kind}.mlir")
        with open(case, "w") as f:
            f.write(damaged)
        verdict = classify([args.het_opt, case, "-o", os.devnull], args.timeout)
        if verdict == "rejected":
            rejected += 1
            os.remove(case)
            continue
        if verdict is not None:
            failures.append((case, verdict))
            continue
        accepted += 1
        # A program that still verifies goes on through the training
        # pipeline and one evaluated step: each may reject it, none may crash.
        if args.het_eval:
            step = case + ".step.mlir"
            verdict = classify([args.het_opt, case, "--het-training-pipeline", "-o", step], args.timeout)
            if verdict is None:
                names = re.findall(r"func\.func @(\w+_train_step)\(", open(step).read())
                for name in names[:1]:
                    verdict = classify([args.het_eval, step, "--function", name,
                                        "--random-inputs", "1"], args.timeout)
                    trained += verdict is None
            if verdict not in (None, "rejected"):
                failures.append((case, verdict))
                continue
            if os.path.exists(step):
                os.remove(step)
        os.remove(case)
    print(f"damaged inputs: {args.cases} cases, {rejected} rejected with a diagnostic, "
          f"{accepted} still valid ({trained} trained one step), {len(failures)} failures")
    for case, why in failures:
        print(f"FAIL {case}: {why}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
