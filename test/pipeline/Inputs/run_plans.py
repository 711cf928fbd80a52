"""Compiles and runs every plan in a directory (het-plan --write-plans) and
checks each one's loss trace against one rank training the same global
batch in the same micro-batches.

usage: run_plans.py --model M.mlir --cluster C.json --plans DIR --work DIR
                    [--steps N] [--data D.npz] [--tolerance T] [-- het-compile options]
Each plan runs under `het-run --cluster C.json`: one rank per device of
each group, idle ranks for the devices a plan leaves unused."""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))


def trace(text):
    return {int(m.group(1)): float(m.group(2))
            for m in re.finditer(r"(?:^|\] )step (\d+) loss (\S+)", text, re.M)}


def describe(plan):
    stages = []
    for s in plan["stages"]:
        groups = s.get("replica_groups") or [{"group": s["group"], "replicas": s["replicas"]}]
        who = "+".join(f"{g['group']}x{g['replicas']}" +
                       (f"@{g['micro_batch_size']}" if "micro_batch_size" in g else "")
                       for g in groups)
        tp = s.get("tensor_parallel", 1)
        stages.append(f"[{s['layers'][0]},{s['layers'][1]}) {who}" + (f" tp{tp}" if tp > 1 else ""))
    return f"{plan['micro_batches']} micro-batches: " + ", ".join(stages)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--cluster", required=True)
    p.add_argument("--plans", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--data")
    p.add_argument("--tolerance", type=float, default=1e-4)
    p.add_argument("compile", nargs="*")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    data = ["--data", a.data] if a.data else []
    plans = sorted(glob.glob(os.path.join(a.plans, "plan-*.json")),
                   key=lambda f: int(re.search(r"plan-(\d+)", f).group(1)))
    if not plans:
        sys.exit(f"no plan-*.json in {a.plans}")
    references, failed = {}, 0
    for path in plans:
        plan = json.load(open(path))
        k = re.search(r"plan-(\d+)", path).group(1)
        key = (plan["global_batch"], plan["micro_batches"])
        if key not in references:
            one = dict(plan)
            one["stages"] = [{"name": "s0", "group": plan["groups"][0]["name"], "replicas": 1,
                              "layers": [0, plan["stages"][-1]["layers"][1]]}]
            ref = os.path.join(a.work, f"one-{key[0]}-{key[1]}")
            json.dump(one, open(ref + ".json", "w"))
            subprocess.run(["het-compile", a.model, "--plan", ref + ".json", "-o", ref] + a.compile,
                           check=True)
            out = subprocess.run([ref, "--steps", str(a.steps)] + data, check=True,
                                 capture_output=True, text=True).stdout
            references[key] = trace(out)
        exe = os.path.join(a.work, f"plan-{k}")
        subprocess.run(["het-compile", a.model, "--plan", path, "-o", exe] + a.compile, check=True)
        run = subprocess.run(["het-run", "--cluster", a.cluster, "--timeout-ms", "30000", exe,
                              "--steps", str(a.steps)] + data, capture_output=True, text=True)
        got, ref = trace(run.stdout), references[key]
        worst = max((abs(got[s] - ref[s]) / max(abs(ref[s]), 1e-12)
                     for s in ref if s in got), default=float("inf"))
        ok = run.returncode == 0 and len(got) == len(ref) == a.steps and worst <= a.tolerance
        failed += not ok
        print(f"plan {k} ({describe(plan)}): {'ran' if run.returncode == 0 else 'FAILED'}, "
              f"{len(got)} steps, max relative error {worst:.2g} against one rank"
              + ("" if ok else " -- MISMATCH"))
        if run.returncode != 0:
            print(run.stdout[-2000:], run.stderr[-2000:])
    print(f"{len(plans) - failed} of {len(plans)} plans ran and matched one rank")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
