#!/usr/bin/env python3
"""Runs het-plan on mechanically damaged copies of the example cluster spec,
a model JSON, a plan and a Sailor profile, and het-opt --het-partition on
damaged plans (fixed seed). Each run must end
with exit code 0, 1 (with one "het-plan: error: <file>: ..." line) or 3
(nothing fits), within 20 s: never a signal, a hang or an uncaught
exception. Prints one summary line."""
import copy, json, os, random, subprocess, sys, tempfile

src, tmp = sys.argv[1], sys.argv[2]
rng = random.Random(6)
os.makedirs(tmp, exist_ok=True)

def load(rel):
    with open(os.path.join(src, rel)) as f:
        return json.load(f)

def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))

REPLACEMENTS = [None, -1, 0, 1e308, -1e308, "x", "", [], {}, True, 2**63, 0.5, [1, 2]]

def damage(doc):
    doc = copy.deepcopy(doc)
    target = rng.choice([p for p in paths(doc) if p])
    parent = doc
    for k in target[:-1]:
        parent = parent[k]
    key = target[-1]
    action = rng.random()
    if action < 0.2 and isinstance(parent, dict):
        del parent[key]
    elif action < 0.3 and isinstance(parent, list):
        parent.pop(key)
    else:
        parent[key] = rng.choice(REPLACEMENTS)
    return doc

cluster = load("examples/clusters/mixed-node.json")
model = {"name": "m", "layers": load("test/plan/Inputs/models/three_layers.json")["layers"]}
plan = load("test/Partition/Inputs/two_stages.plan.json")
profile = load("data/profiles/sailor/OPT-350/A100-40/profile.json")
small_profile = {"1": {"1": {str(i): profile["1"]["1"][str(i)] for i in range(3)}}}

runs = bad = 0
def run(args, what):
    global runs, bad
    runs += 1
    try:
        p = subprocess.run(["het-plan"] + args, capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        print(f"HANG: {what}: {args}")
        bad += 1
        return
    ok = p.returncode in (0, 3) or (p.returncode == 1 and p.stderr.startswith("het-plan: error: "))
    if not ok:
        bad += 1
        print(f"BAD exit {p.returncode}: {what}: {args}\n{p.stderr[-500:]}")

def write(name, doc):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump(doc, f)
    return path

good_cluster = write("cluster.json", cluster)
good_model = write("model.json", model)
for i in range(60):
    run(["--cluster", write(f"c{i}.json", damage(cluster)), "--model", good_model, "--top", "1"], "cluster")
for i in range(40):
    run(["--cluster", good_cluster, "--model", write(f"m{i}.json", damage(model)), "--top", "1"], "model")
for i in range(40):
    run(["--cluster", good_cluster, "--model", good_model,
         "--evaluate", write(f"p{i}.json", damage(plan))], "plan")
for i in range(40):
    d = os.path.join(tmp, f"prof{i}", "A100-80")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "profile.json"), "w") as f:
        json.dump(damage(small_profile), f)
    run(["--cluster", good_cluster, "--model", good_model, "--top", "1",
         "--profiles", os.path.dirname(d)], "profile")
# het-partition reads the same plans: it must fail with a diagnostic.
step = os.path.join(src, "test/Partition/Inputs/mlp_step.mlir")
for i in range(40):
    runs += 1
    path = write(f"pp{i}.json", damage(plan))
    try:
        p = subprocess.run(["het-opt", f"--het-partition=plan={path}", step],
                           capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        print(f"HANG: het-partition: {path}")
        bad += 1
        continue
    if not (p.returncode == 0 or (p.returncode == 1 and "error: " in p.stderr)):
        bad += 1
        print(f"BAD exit {p.returncode}: het-partition: {path}\n{p.stderr[-500:]}")
print(f"{runs} damaged inputs, {bad} bad endings")
sys.exit(1 if bad else 0)
