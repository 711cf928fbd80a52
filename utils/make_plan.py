"""Writes a plan JSON (docs/planner.md) for a cluster spec from a compact
description of its stages, so a plan fits on one command line (tests,
benchmarks, trying a split by hand).

usage: make_plan.py CLUSTER.json OUT.plan.json --global-batch G --micro-batches M
               --stage B:E=GROUP:REPLICAS[@SAMPLES][xEXPERTS][,...][/TP] ...

  --stage 0:2=onednn:1              layers [0, 2) on one onednn replica
  --stage 2:3=mlir:2                two mlir replicas, even shares
  --stage 0:2=onednn:1@48,mlir:1@16 one replica of each kind, 48 and 16 samples
  --stage 0:3=onednn:1/2            one replica over 2 tensor-parallel devices
  --stage 0:7=onednn:1x3,mlir:1x1   expert parallelism: the onednn replica holds 3
                                    experts of each mixture-of-experts layer, the
                                    mlir replica 1
"""
import argparse
import glob
import json
import os

CATALOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "devices")


def vendor_and_arch(kind):
    """cpu.<arch> as written; a catalog kind (H100, MI300X) by its entry."""
    if kind.startswith("cpu."):
        return tuple(kind.split(".", 1))
    for path in sorted(glob.glob(os.path.join(CATALOG, "*.json"))):
        doc = json.load(open(path))
        for entry in doc if isinstance(doc, list) else doc.get("devices", []):
            if isinstance(entry, dict) and (entry.get("name") == kind or
                                            kind in entry.get("aliases", [])):
                return entry["vendor"], entry["arch"]
    return kind, kind


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cluster")
    p.add_argument("out")
    p.add_argument("--global-batch", type=int, required=True)
    p.add_argument("--micro-batches", type=int, required=True)
    p.add_argument("--stage", action="append", required=True)
    a = p.parse_args()

    spec = json.load(open(a.cluster))
    groups, links = [], []
    for node in spec["nodes"]:
        for d in node["devices"]:
            vendor, arch = vendor_and_arch(d["kind"])
            groups.append({"name": d["group"], "kind": d["kind"], "vendor": vendor, "arch": arch,
                           "count": d["count"] * node.get("count", 1),
                           "devices_per_node": d["count"], "nodes": node.get("count", 1),
                           "memory_gib": 4})
        for link in node.get("links", []):
            links.append({"between": link["between"], "bandwidth_gbps": link["bandwidth_gbps"],
                          "latency_us": link["latency_us"]})
    stages = []
    for i, text in enumerate(a.stage):
        layers, _, rest = text.partition("=")
        begin, end = (int(x) for x in layers.split(":"))
        rest, _, tp = rest.partition("/")
        stage = {"name": f"s{i}", "layers": [begin, end], "tensor_parallel": int(tp or 1)}
        members = []
        for member in rest.split(","):
            group, _, count = member.partition(":")
            count, _, experts = count.partition("x")
            count, _, samples = count.partition("@")
            m = {"group": group, "replicas": int(count)}
            if samples:
                m["micro_batch_size"] = int(samples)
            if experts:
                m["experts"] = int(experts)
            members.append(m)
        if len(members) == 1 and "micro_batch_size" not in members[0] and "experts" not in members[0]:
            stage.update(members[0])
        else:
            stage["replica_groups"] = members
        stages.append(stage)
    plan = {"format": "het-plan/1", "cluster": spec["name"], "global_batch": a.global_batch,
            "micro_batches": a.micro_batches, "groups": groups, "links": links, "stages": stages}
    with open(a.out, "w") as f:
        json.dump(plan, f, indent=2)


if __name__ == "__main__":
    main()
