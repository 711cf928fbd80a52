"""Rewrites the contraction records of a het-tune export, for tests that
need a known (or a broken) record rather than one this machine's timing
makes.

    edit_tilings.py in.json out.json choice TEXT    every record's tiling is TEXT
    edit_tilings.py in.json out.json compiler TEXT  every record's compiler is TEXT
"""
import json
import sys

source, target, field, value = sys.argv[1:5]
with open(source) as f:
    data = json.load(f)
count = 0
for record in data["records"]:
    if record["kind"] == "kernel" and record["workload"].startswith("contraction "):
        record[field] = value
        count += 1
with open(target, "w") as f:
    json.dump(data, f, indent=1)
print(f"{count} contraction records now have {field} '{value}'")
