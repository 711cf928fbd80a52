"""Rewrites the kernel records of a het-tune export so that one engine wins
every product (twice as fast as the other), for tests that need a known
choice rather than one this machine's timing makes.

    prefer_engine.py in.json out.json openblas|onednn
"""
import json
import sys

source, target, engine = sys.argv[1:]
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
    seconds[engine] = slower / 2
    record["choice"] = engine
    record["seconds"] = slower / 2
    count += 1
with open(target, "w") as f:
    json.dump(data, f, indent=1)
print(f"{count} kernel records now prefer {engine}")
