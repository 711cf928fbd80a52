"""Makes the checkpoints under a directory look as het wrote them before
layouts were recorded: no "meta", no tensor "shard", a scalar's shape [1];
each manifest's checksum recomputed (SHA-256 of the compact, key-sorted
body, as lib/Checkpoint/Store.cpp writes it).

usage: strip_layout.py DIR"""
import glob
import hashlib
import json
import sys

count = 0
for path in glob.glob(sys.argv[1] + "/rank*/step-*.json"):
    manifest = json.load(open(path))
    body = manifest["body"]
    body.pop("meta", None)
    for t in body["tensors"]:
        t.pop("shard", None)
        if t["shape"] == []:
            t["shape"] = [1]
    dumped = json.dumps(body, separators=(",", ":"), sort_keys=True)
    manifest["manifest_sha256"] = hashlib.sha256(dumped.encode()).hexdigest()
    json.dump(manifest, open(path, "w"), indent=1)
    count += 1
print(f"stripped {count} manifests")
