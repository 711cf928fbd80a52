#!/usr/bin/env python3
"""Summarizes a cluster spec and fails, naming the field, if it is malformed.
(The planner's own validator supersedes this once het-plan exists.)"""
import json, sys

path = sys.argv[1]
spec = json.load(open(path))
def need(cond, where, what):
    if not cond:
        sys.exit(f"{path}: {where}: {what}")
need(isinstance(spec.get("name"), str), "name", "missing or not a string")
need(spec.get("nodes"), "nodes", "missing or empty")
nodes = devices = 0
groups = set()
for i, node in enumerate(spec["nodes"]):
    where = f"nodes[{i}]"
    need(isinstance(node.get("count"), int) and node["count"] >= 1, where + ".count", "must be an integer >= 1")
    local = set()
    for j, dev in enumerate(node.get("devices", [])):
        need(dev.get("kind"), f"{where}.devices[{j}].kind", "missing")
        need(isinstance(dev.get("count"), int) and dev["count"] >= 1, f"{where}.devices[{j}].count", "must be an integer >= 1")
        local.add(dev["group"])
        devices += dev["count"] * node["count"]
    for j, link in enumerate(node.get("links", [])):
        need(set(link["between"]) <= local, f"{where}.links[{j}].between", "names a group not on this node")
        need(link["bandwidth_gbps"] > 0, f"{where}.links[{j}].bandwidth_gbps", "must be positive")
    groups |= local
    nodes += node["count"]
print(f"{spec['name']}: {nodes} nodes, {devices} devices, {len(groups)} groups")
