"""The uninterrupted run an elastic job is compared with: the first plan
trained to the step the elastic job resumed from (read from its het-run log),
with checkpoints, then the re-planned executable resuming from them to the
end. Both are started by het-run --cluster.

usage: elastic_reference.py LOG --first P C --then P2 C2 --steps N
           --checkpoint-dir D --every K [--save OUT] -- ARGS...
(ARGS: the programs' other arguments, e.g. --data F)"""
import argparse
import re
import subprocess
import sys

p = argparse.ArgumentParser()
p.add_argument("log")
p.add_argument("--first", nargs=2, required=True, metavar=("PROGRAM", "CLUSTER"))
p.add_argument("--then", nargs=2, required=True, metavar=("PROGRAM", "CLUSTER"))
p.add_argument("--steps", type=int, required=True)
p.add_argument("--checkpoint-dir", required=True)
p.add_argument("--every", type=int, required=True)
p.add_argument("--save")
argv = sys.argv[1:]
rest = argv[argv.index("--") + 1:] if "--" in argv else []
a = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
a.args = rest

m = re.search(r"het-run: elastic: resumed from step (\d+)", open(a.log).read())
if not m:
    sys.exit(f"{a.log}: no 'het-run: elastic: resumed from step' line")
resumed = int(m.group(1))
checkpoints = ["--checkpoint-dir", a.checkpoint_dir, "--checkpoint-every", str(a.every)]
for (program, cluster), steps, extra in [
        (a.first, resumed, []),
        (a.then, a.steps, ["--save", a.save] if a.save else [])]:
    cmd = ["het-run", "--cluster", cluster, "--timeout-ms", "20000", program,
           "--steps", str(steps)] + a.args + checkpoints + extra
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(" ".join(cmd) + " failed:\n" + r.stderr)
print(f"reference: the first plan to step {resumed}, the re-planned one from there")
