"""Checks het-sim --json against het-plan's prediction (issue 17's bar):
failure-free iterations within 5 %, utilization and goodput in range, and
the whole simulation within the time limit given."""
import json
import sys

limit_s = float(sys.argv[1])
d = json.load(sys.stdin)
predicted = d["predicted_s"]
problems = []
for name, value in (("replayed", d["replayed_s"]), ("mean", d["iterations"]["mean_s"]),
                    ("p50", d["iterations"]["p50_s"])):
    if abs(value / predicted - 1) > 0.05:
        problems.append(f"{name} {value:.4f} s is not within 5% of het-plan's {predicted:.4f} s")
u = d["utilization"]["ratio"]
if not 0 < u <= 1.0001:
    problems.append(f"utilization {u} outside (0, 1]")
if "failures" in d:
    f = d["failures"]
    if not 0 < f["goodput"] < 1:
        problems.append(f"goodput {f['goodput']} outside (0, 1)")
    if f["best_every"] < 1 or f["sweep"][0]["goodput"] < max(s["goodput"] for s in f["sweep"]):
        problems.append("the best interval is not the sweep's best")
if d["total_seconds"] > limit_s:
    problems.append(f"took {d['total_seconds']:.1f} s, over {limit_s} s")
for p in problems:
    print("het-sim check: " + p)
print("het-sim check: " + ("FAILED" if problems else "ok"))
sys.exit(1 if problems else 0)
