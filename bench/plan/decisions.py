#!/usr/bin/env python3
"""Decision quality of the planner: is the plan het chooses the fastest that runs?

For each model on the local two-kind cluster: `het-tune stages` measures
this host (stage profiles and messages), `het-plan --top K --tuning-db`
lists its K best plans, best first, each with its predicted iteration
time; every listed plan is compiled and run with het-run (median of
--runs runs of --steps steps; a run's iteration time is the median of its
steps). Reported per model:

- regret: the chosen plan's (plan 1's) measured time over the fastest
  measured time among the listed plans (1.00: het chose the fastest);
- Spearman's rank correlation of predicted against measured times over
  the list (1.0: het orders the plans as they run);
- each plan's measured / predicted ratio.

The issue's bars (issue 46): regret <= 1.10, Spearman >= 0.8, every ratio
within 25 %. Asserts nothing; writes a table and a JSON record (date,
machine, every number) under --out. Usage:

    .venv/bin/python bench/plan/decisions.py [--models mlp,cnn,gpt] [--top 10]
        [--runs 3] [--out bench/plan/results]

The main job (scripts/run.sh) runs it on its own model and tuning database:
`--model-file F --tuning-db DB --global-batch N --max-micro-batches M
--steps S --no-record` (one model, no new measurement of the host, no
JSON record).
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(ROOT, "build", "bin")
CLUSTER = os.path.join(ROOT, "examples", "clusters", "local-two-kinds.json")
# Global batch per model, as --plan auto picks it on this cluster (bench/plan/fidelity.sh),
# and steps per run (enough for a steady median, short enough for ten plans).
MODELS = {"mlp": (128, 200), "cnn": (32, 30), "gpt": (16, 100)}


def run(args, **kw):
    done = subprocess.run(args, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"decisions: {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout + done.stderr


def ranks(values):
    """Ranks 1..n, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    if len(a) < 2:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va and vb else float("nan")


def measure(exe, steps, runs, record_in=None, load=None):
    times = []
    for _ in range(runs):
        # With record_in, het-run records the time under the plan's key
        # (het-compile --plan auto --tuning-db then ranks by it).
        record = ["--tuning-db", record_in] if record_in else []
        out = run([os.path.join(BIN, "het-run"), "--cluster", CLUSTER, "--timeout-ms", "120000",
                   *record, exe, "--steps", str(steps), "--print-every", "100000",
                   *(["--load", load] if load else [])])
        m = re.search(r"iteration time ([0-9.]+) ms", out)
        if not m:
            sys.exit(f"decisions: no iteration time in the output of {exe}:\n{out[-2000:]}")
        times.append(float(m.group(1)))
    return statistics.median(times), times


def describe(plan):
    parts = []
    for s in plan["stages"]:
        groups = "+".join(f"{g['group']}x{g['replicas']}" for g in s.get("replica_groups", [])) \
            or f"{s.get('group', '?')}x{s.get('replicas', 1)}"
        tp = s.get("tensor_parallel", 1)
        parts.append(f"[{s['layers'][0]},{s['layers'][1]}) {groups}" + (f" tp{tp}" if tp > 1 else "")
                     + (f" mbs {'/'.join(str(g['micro_batch_size']) for g in s['replica_groups'])}"
                        if len(s.get("replica_groups", [])) > 1 else ""))
    return f"{plan.get('micro_batches', 1)}mb " + " | ".join(parts)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="mlp,cnn,gpt")
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("--model-file", help="one model (.mlir) instead of --models")
    p.add_argument("--tuning-db", help="price by this database (het-tune stages already ran)")
    p.add_argument("--load", help="parameters and constants for every run (the .npz het.export "
                   "writes beside an imported model)")
    p.add_argument("--global-batch", type=int, help="instead of the model's default")
    p.add_argument("--max-micro-batches", type=int, help="passed to het-plan")
    p.add_argument("--steps", type=int, help="steps per run instead of the model's default")
    p.add_argument("--no-record", action="store_true", help="print only, write no JSON record")
    p.add_argument("--record-plans", action="store_true",
                   help="het-run --tuning-db: record each plan's measured iteration time in the "
                        "tuning database, for het-compile --plan auto --tuning-db to rank by")
    p.add_argument("--chosen", help="a plan file another tool chose (het-compile --plan auto): "
                   "say which listed plan it is and how it ran against the fastest")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="het-decisions-")
    stamp = datetime.datetime.now(datetime.timezone.utc)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
               platform.processor())
    record = {"date": stamp.strftime("%Y-%m-%dT%H:%MZ"), "machine": f"{cpu}, {os.cpu_count()} cores",
              "cluster": os.path.relpath(CLUSTER, ROOT), "top": args.top, "runs": args.runs,
              "models": {}}
    print(f"# {record['date']}, {record['machine']}; het-plan --top {args.top} --tuning-db, "
          f"each plan run {args.runs}x with het-run (median)")
    models = [os.path.splitext(os.path.basename(args.model_file))[0]] if args.model_file \
        else args.models.split(",")
    for model in models:
        batch, steps = MODELS.get(model, (None, 100))
        batch = args.global_batch or batch
        steps = args.steps or steps
        src = args.model_file or os.path.join(ROOT, "examples", "models", f"{model}.mlir")
        db = args.tuning_db or os.path.join(work, f"{model}.db")
        if not args.tuning_db:
            run([os.path.join(BIN, "het-tune"), "stages", src, "--cluster", CLUSTER, "--db", db,
                 *(["--load", args.load] if args.load else [])])
        plans_dir = os.path.join(work, f"{model}-plans")
        plan_args = [os.path.join(BIN, "het-plan"), "--cluster", CLUSTER, "--model", src,
                     "--tuning-db", db, "--top", str(args.top), "--json", "--write-plans", plans_dir]
        if batch:
            plan_args += ["--global-batch", str(batch)]
        if args.max_micro_batches:
            plan_args += ["--max-micro-batches", str(args.max_micro_batches)]
        listing = json.loads(subprocess.run(plan_args, capture_output=True, text=True,
                                            check=True).stdout)
        rows = []
        for k, plan in enumerate(listing["plans"], start=1):
            plan_file = os.path.join(plans_dir, f"plan-{k}.json")
            exe = os.path.join(work, f"{model}-{k}")
            run([os.path.join(BIN, "het-compile"), src, "--lr", "0.05", "--cluster", CLUSTER,
                 "--plan", plan_file, "--tuning-db", db, "-o", exe])
            measured, times = measure(exe, steps, args.runs, db if args.record_plans else None,
                                      args.load)
            predicted = plan["predicted"]["iteration_s"] * 1e3
            rows.append({"plan": k, "shape": describe(plan), "predicted_ms": predicted,
                         "measured_ms": measured, "runs_ms": times, "ratio": measured / predicted})
        best = min(r["measured_ms"] for r in rows)
        regret = rows[0]["measured_ms"] / best
        rho = spearman([r["predicted_ms"] for r in rows], [r["measured_ms"] for r in rows])
        worst = max(abs(r["ratio"] - 1) for r in rows)
        record["models"][model] = {"global_batch": listing["plans"][0]["global_batch"],
                                   "steps": steps, "plans": rows,
                                   "regret": regret, "spearman": rho,
                                   "worst_ratio_error": worst}
        print(f"\n{model} (global batch {listing['plans'][0]['global_batch']}, {len(rows)} plans "
              f"listed)")
        print(f"{'plan':>4}  {'predicted ms':>12}  {'measured ms':>11}  {'meas/pred':>9}  shape")
        for r in rows:
            mark = " <- fastest measured" if r["measured_ms"] == best else ""
            print(f"{r['plan']:>4}  {r['predicted_ms']:12.3f}  {r['measured_ms']:11.3f}  "
                  f"{r['ratio']:9.2f}  {r['shape']}{mark}")
        print(f"{model}: regret {regret:.2f} (bar 1.10), Spearman {rho:.2f} (bar 0.8), "
              f"worst measured/predicted off by {100 * worst:.0f}% (bar 25%)")
        if args.chosen:
            shape = describe(json.load(open(args.chosen)))
            same = [r for r in rows if r["shape"] == shape]
            if same:
                r = same[0]
                print(f"{model}: {os.path.basename(args.chosen)} is listed plan {r['plan']}: measured "
                      f"{r['measured_ms']:.3f} ms, {r['ratio']:.2f}x its prediction; the fastest "
                      f"listed {best:.3f} ms: {r['measured_ms'] / best:.2f}x it (bar 1.10)")
            else:
                print(f"{model}: {os.path.basename(args.chosen)} ({shape}) is not among the "
                      f"{len(rows)} plans listed")
    if args.no_record:
        return
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, stamp.strftime("%Y-%m-%dT%H%MZ") + "-decisions-" +
                        args.models.replace(",", "-") + ".json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"\n(record in {path}; work files in {work})")


if __name__ == "__main__":
    main()
