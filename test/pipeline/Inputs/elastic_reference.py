"""The uninterrupted run an elastic job is compared with: each plan the
elastic job ran trained, in turn, to the step the next one resumed from
(read from the job's het-run log: its "het-run: elastic: resumed from step
N" lines, in order), all with checkpoints in one directory, and the last
plan to the end. Every plan is started by het-run --cluster.

usage: elastic_reference.py LOG --plan P C [--plan P2 C2 ...] --steps N
           --checkpoint-dir D --every K [--save OUT] -- ARGS...
(ARGS: the programs' other arguments, e.g. --data F)"""
import argparse
import re
import subprocess
import sys

p = argparse.ArgumentParser()
p.add_argument("log")
p.add_argument("--plan", nargs=2, action="append", required=True, metavar=("PROGRAM", "CLUSTER"))
p.add_argument("--steps", type=int, required=True)
p.add_argument("--checkpoint-dir", required=True)
p.add_argument("--every", type=int, required=True)
p.add_argument("--save")
argv = sys.argv[1:]
rest = argv[argv.index("--") + 1:] if "--" in argv else []
a = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
a.args = rest

resumed = [int(s) for s in re.findall(r"het-run: elastic: resumed from step (\d+)", open(a.log).read())]
if len(resumed) != len(a.plan) - 1:
    sys.exit(f"{a.log}: {len(resumed)} 'het-run: elastic: resumed from step' lines for "
             f"{len(a.plan)} plans")
checkpoints = ["--checkpoint-dir", a.checkpoint_dir, "--checkpoint-every", str(a.every)]
ends = resumed + [a.steps]
for i, ((program, cluster), steps) in enumerate(zip(a.plan, ends)):
    last = i + 1 == len(a.plan)
    cmd = ["het-run", "--cluster", cluster, "--timeout-ms", "20000", program,
           "--steps", str(steps)] + a.args + checkpoints + (["--save", a.save] if last and a.save else [])
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(" ".join(cmd) + " failed:\n" + r.stderr)
print("reference: " + ", then ".join(f"plan {i + 1} to step {s}" for i, s in enumerate(ends)))
