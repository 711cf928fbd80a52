#!/usr/bin/env python3
"""Helpers of measured_plans.test.

    measured_plans.py ranks PLAN          ranks the plan uses
    measured_plans.py batch PLAN          its global batch
    measured_plans.py same PLAN PLAN      whether two plans run alike (what a plan key digests)
    measured_plans.py check LOG PLAN DIR  het-compile --plan auto --tuning-db's ranking:
        the choice is the lowest expected time (a measured one: the lowest measured),
        and PLAN (what it wrote) is that candidate, DIR/plan-K.json, when it ran
"""
import json
import re
import sys

RUNS = ("cluster", "global_batch", "micro_batches", "schedule", "stages")


def runs(path):
    plan = json.load(open(path))
    return {k: plan[k] for k in RUNS if k in plan}


def ranks(path):
    plan = json.load(open(path))
    return sum(sum(g["replicas"] for g in s.get("replica_groups", [s])) * s.get("tensor_parallel", 1)
               for s in plan["stages"])


def main():
    what = sys.argv[1]
    if what == "ranks":
        print(ranks(sys.argv[2]))
    elif what == "batch":
        print(json.load(open(sys.argv[2]))["global_batch"])
    elif what == "same":
        print("same plan" if runs(sys.argv[2]) == runs(sys.argv[3]) else "other plans")
    elif what == "check":
        log, written, folder = sys.argv[2:5]
        text = open(log).read()
        measured = {int(k): float(ms) for k, ms in
                    re.findall(r"candidate (\d+): measured ([0-9.]+) ms before", text)}
        ranked = re.search(r"ranked (\d+) candidates .* x ([0-9.]+) \(.*\): candidate (\d+), "
                           r"(measured|expected) ([0-9.]+) ms", text)
        if not ranked:
            sys.exit(f"{log}: no ranking line")
        chosen, how, seconds = int(ranked.group(3)), ranked.group(4), float(ranked.group(5))
        if how == "measured":
            if chosen not in measured or seconds != min(measured.values()):
                sys.exit(f"chose candidate {chosen} at {seconds} ms, measured: {measured}")
        elif measured and seconds >= min(measured.values()):
            sys.exit(f"chose an unmeasured candidate expected at {seconds} ms over {measured}")
        # The plan written is the chosen candidate's: het-plan's plan-K under
        # the same calibrated kinds is het-compile's candidate K.
        candidate = f"{folder}/plan-{chosen}.json"
        if chosen in measured and runs(written) != runs(candidate):
            sys.exit(f"{written} is not candidate {chosen} ({candidate})")
        print(f"{len(measured)} candidates measured; chose the {how} fastest "
              f"({seconds:.3f} ms)")
    else:
        sys.exit(f"unknown {what}")


if __name__ == "__main__":
    main()
