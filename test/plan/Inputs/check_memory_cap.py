#!/usr/bin/env python3
"""Checks a planned job's measured memory against its cap and its prediction.

    check_memory_cap.py EVALUATION.json DEVICES.json RUN.out

EVALUATION.json is `het-plan --evaluate PLAN --json` (each stage's predicted
peak per device), DEVICES.json the `--devices` file that capped each kind's
memory, RUN.out what `het-run` printed (each rank's stage and its "peak X MiB
of buffers"). Every rank's peak must be at most its kind's memory and within
15 % of the stage's prediction; prints one line per rank and exits 1 if any
is not.
"""
import json
import re
import sys


def main():
    evaluation, devices, run = sys.argv[1:4]
    stages = json.load(open(evaluation))["stages"]
    cap = {d["name"]: d["memory_gib"] * 1024.0 for d in json.load(open(devices))["devices"]}
    out = open(run).read()
    place = {int(r): (int(s), f"cpu.{k}") for r, s, k in
             re.findall(r"rank (\d+): stage s(\d+) .* on (\w+) \(", out)}
    peaks = {int(r): float(m) for r, m in re.findall(r"rank (\d+): memory: peak (\S+) MiB of buffers", out)}
    if not peaks or set(peaks) != set(place):
        sys.exit(f"{run}: no memory line for every rank (ranks {sorted(place)}, lines {sorted(peaks)})")
    bad = False
    for rank in sorted(peaks):
        stage, kind = place[rank]
        predicted = stages[stage]["memory_bytes"] / 2**20
        ratio = peaks[rank] / predicted
        under = peaks[rank] <= cap[kind]
        close = abs(ratio - 1) <= 0.15
        bad |= not (under and close)
        print(f"rank {rank} (s{stage}, {kind}): peak {peaks[rank]:.3f} MiB of buffers, "
              f"{'under' if under else 'OVER'} the cap of {cap[kind]:.3f} MiB; predicted "
              f"{predicted:.3f} MiB, measured/predicted {ratio:.2f}{'' if close else ' (off by more than 15 %)'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
