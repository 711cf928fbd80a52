"""Checks that a job restarted after a SIGKILL resumed from a checkpoint,
not from scratch (training is deterministic, so a restart from scratch also
ends bit-identical and only this tells the two apart).

Reads het-run's merged stdout: the killed rank's "will SIGKILL myself at
step K", then after "SIGKILL at step K" every rank's "resumed from step R"
(the restarted attempt begins at the first of those: a surviving rank of
the first attempt may still print a step after the SIGKILL line).
Requires: all RANKS ranks resumed from the same R; R a multiple of EVERY
with 0 < R <= K (asynchronous checkpoints may lag the training loop by
several steps); with --exact (synchronous checkpoints) R is the newest
checkpoint step, K - K % EVERY (with --sender-may-lead, for kills inside
a transfer, also K - EVERY when K % EVERY == 0: each rank saves its part
of checkpoint K after its own step K-1, with no barrier after, so the
killed rank may have saved it and begun step K's sends while another rank
had not finished saving it; the newest checkpoint on every rank is then K
- EVERY. recovery.test met that on 2026-12-07: rank 1 killed in step 21's
first transfer, its replica rank 0 without checkpoint 21); the restarted
job's first step is R; and
the losses it repeats (R .. K-1) equal the first attempt's. Step K-1 may
be missing from the first attempt when the killed rank does not print the
loss (het-run stops the others before the last stage prints K-1); every
earlier step must be there.

usage: check_resume.py OUT --ranks N --every E [--exact [--sender-may-lead]]"""
import argparse
import re
import sys

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--ranks", type=int, required=True)
p.add_argument("--every", type=int, required=True)
p.add_argument("--exact", action="store_true")
p.add_argument("--sender-may-lead", action="store_true")
a = p.parse_args()

lines = open(a.out).read().splitlines()
planned = [int(m.group(1)) for m in (re.search(r"will SIGKILL myself at step (\d+)", l) for l in lines) if m]
killed_at = [i for i, l in enumerate(lines) if re.search(r"\] SIGKILL at step \d+", l)]
if len(planned) != 1 or len(killed_at) != 1:
    sys.exit(f"{a.out}: expected one planned and one delivered SIGKILL, found {len(planned)} and {len(killed_at)}")
kill = planned[0]
before, after = lines[:killed_at[0]], lines[killed_at[0] + 1:]

if any("starting from scratch" in l for l in after):
    sys.exit(f"{a.out}: a rank restarted from scratch after the kill at step {kill}")
resumed = {}
for l in after:
    m = re.match(r"\[rank (\d+)\] resumed from step (\d+)", l)
    if m:
        resumed[int(m.group(1))] = int(m.group(2))
if sorted(resumed) != list(range(a.ranks)):
    sys.exit(f"{a.out}: ranks {sorted(resumed)} resumed, expected all of 0..{a.ranks - 1}")
steps = set(resumed.values())
if len(steps) != 1:
    sys.exit(f"{a.out}: ranks resumed from different steps: {resumed}")
step = steps.pop()
if step % a.every or not 0 < step <= kill:
    sys.exit(f"{a.out}: resumed from step {step}, which is not a checkpoint step (every {a.every}) "
             f"before the kill at step {kill}")
newest = kill - kill % a.every
lagging_receiver = a.sender_may_lead and kill % a.every == 0 and step == kill - a.every
if a.exact and step != newest and not lagging_receiver:
    sys.exit(f"{a.out}: resumed from step {step}, not from the newest synchronous checkpoint "
             f"before the kill at step {kill} ({kill - kill % a.every})")


def losses(block):
    return [(int(m.group(1)), m.group(2))
            for m in (re.search(r"\] step (\d+) loss (\S+)", l) for l in block) if m]


# The ranks' lines are merged as they arrive: a surviving rank of the first
# attempt may still print a step after the killed rank's SIGKILL line. The
# restarted job begins with its first "resumed from" line.
restart = next(i for i, l in enumerate(lines) if i > killed_at[0] and re.match(r"\[rank \d+\] resumed from step", l))
first, second = dict(losses(lines[:restart])), losses(lines[restart:])
if not second or second[0][0] != step:
    sys.exit(f"{a.out}: the restarted job's first step is {second[0][0] if second else None}, not {step}")
# The killed rank reached step K, so it finished K-1; the rank that prints
# the loss (last stage, replica 0) finished K-2 (its gradients of K-1 fed
# the killed rank's K-1) but, on another stage, may not have printed K-1
# before het-run stopped the job. If it is the killed rank it printed K-1.
victim = int(re.search(r"\[rank (\d+)\] SIGKILL at step", lines[killed_at[0]]).group(1))
reporters = {int(m.group(1)) for m in (re.match(r"\[rank (\d+)\] step \d+ loss", l) for l in lines) if m}
for s, loss in second:
    if s >= kill or (s == kill - 1 and s not in first and reporters != {victim}):
        continue
    if first.get(s) != loss:
        sys.exit(f"{a.out}: step {s} loss {loss} after the restart, {first.get(s)} before it")
print(f"all {a.ranks} ranks resumed from step {step} after the kill at step {kill}; "
      f"steps {step}..{kill - 1} repeated with the same losses")
