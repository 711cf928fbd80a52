"""Reads het-run's stderr of a failed job and checks that the first failure
was rank FAILED, and that every other rank exited non-zero on its own (not
killed by het-run) within LIMIT seconds of the failure.

usage: check_fates.py ERR NRANKS FAILED LIMIT_S"""
import re
import sys

err, nranks, failed, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
fail_at = None
fates = {}
for line in open(err):
    m = re.match(r"het-run: rank (\d+) (.*) after ([0-9.]+) s; stopping the job$", line.strip())
    if m:
        if int(m.group(1)) != failed:
            sys.exit(f"first failure was rank {m.group(1)}, expected {failed}")
        fail_at = float(m.group(3))
        continue
    m = re.match(r"het-run: rank (\d+) (.*) after ([0-9.]+) s$", line.strip())
    if m:
        fates[int(m.group(1))] = (m.group(2), float(m.group(3)))
if fail_at is None:
    sys.exit("no failure reported")
if sorted(fates) != list(range(nranks)):
    sys.exit(f"fates of ranks {sorted(fates)}, expected 0..{nranks - 1}")
worst = 0.0
for r, (what, t) in sorted(fates.items()):
    if r == failed:
        continue
    if not re.match(r"exited with status [1-9]", what):
        sys.exit(f"rank {r} {what}: expected a non-zero exit of its own")
    worst = max(worst, t - fail_at)
if worst > limit:
    sys.exit(f"a rank took {worst:.3f} s after the failure to exit (limit {limit} s)")
print(f"every surviving rank exited non-zero on its own within {worst:.3f} s of the failure (limit {limit} s)")
