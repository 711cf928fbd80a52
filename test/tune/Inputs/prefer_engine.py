"""Rewrites the kernel records of a het-tune export so that one engine wins
every product (by default twice as fast as the other), for tests that need
a known choice rather than one this machine's timing makes.

    prefer_engine.py in.json out.json openblas|onednn [RATIO]

RATIO: the winner's time over the loser's (default 0.5).
"""
import json
import sys

source, target, engine = sys.argv[1:4]
ratio = float(sys.argv[4]) if len(sys.argv) > 4 else 0.5
other = "onednn" if engine == "openblas" else "openblas"
with open(source) as f:
    data = json.load(f)
count = 0
for record in data["records"]:
    if record["kind"] != "kernel":
        continue
    seconds = record["details"]["seconds"]
    slower = max(seconds.values())
    seconds[other] = slower
    seconds[engine] = slower * ratio
    record["choice"] = engine
    record["seconds"] = slower * ratio
    count += 1
with open(target, "w") as f:
    json.dump(data, f, indent=1)
print(f"{count} kernel records now prefer {engine}")
