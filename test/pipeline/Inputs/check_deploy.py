"""Checks deploy/'s Grafana dashboard and Prometheus alert rules against a
live job's /metrics text (scrape_metrics.py writes it).

usage: check_deploy.py DASHBOARD.json RULES.yml METRICS.prom

The dashboard is validated against the part of Grafana's dashboard model it
uses (a JSON schema: title, uid, schemaVersion, panels with ids, types, grid
positions within 24 columns and PromQL targets with distinct refIds); the
rules file as Prometheus reads it (groups of rules, each alert with an
expression, a duration, a severity and a summary). Every expression must be
balanced PromQL calling only known functions, and every het_* metric it
queries must be a family the live /metrics declares. Exits 1 naming the
first problem."""
import json
import re
import sys

import jsonschema
import yaml

dashboard_path, rules_path, metrics_path = sys.argv[1:4]

PANEL_TYPES = {"stat", "timeseries", "gauge", "table", "text", "bargauge"}
TARGET = {"type": "object", "required": ["refId", "expr"],
          "properties": {"refId": {"type": "string", "pattern": "^[A-Z]$"},
                         "expr": {"type": "string", "minLength": 1},
                         "legendFormat": {"type": "string"}}}
SCHEMA = {
    "type": "object",
    "required": ["title", "uid", "schemaVersion", "panels", "templating"],
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "uid": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,40}$"},
        "schemaVersion": {"type": "integer", "minimum": 30},
        "refresh": {"type": "string"},
        "templating": {"type": "object", "required": ["list"]},
        "panels": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["id", "type", "title", "gridPos", "targets"],
            "properties": {
                "id": {"type": "integer", "minimum": 1},
                "type": {"enum": sorted(PANEL_TYPES)},
                "title": {"type": "string", "minLength": 1},
                "gridPos": {"type": "object", "required": ["h", "w", "x", "y"],
                            "properties": {k: {"type": "integer", "minimum": 0} for k in "hwxy"}},
                "targets": {"type": "array", "minItems": 1, "items": TARGET}}}}}}

FUNCTIONS = {"rate", "irate", "increase", "sum", "avg", "min", "max", "count", "avg_over_time",
             "max_over_time", "min_over_time", "quantile_over_time", "changes", "delta", "deriv",
             "abs", "clamp_min", "clamp_max", "histogram_quantile", "topk", "bottomk", "on",
             "ignoring", "by", "without", "group_left", "group_right", "time", "vector", "absent"}
DURATION = re.compile(r"^[0-9]+[smhd]$")


def fail(message):
    sys.exit(f"check_deploy: {message}")


declared = set()
for line in open(metrics_path):
    if line.startswith("# TYPE "):
        declared.add(line.split()[2])
if not declared:
    fail(f"{metrics_path}: no metric family declared")


def check_expr(where, expr):
    depth = []
    pairs = {")": "(", "]": "[", "}": "{"}
    for ch in expr:
        if ch in "([{":
            depth.append(ch)
        elif ch in ")]}":
            if not depth or depth.pop() != pairs[ch]:
                fail(f"{where}: unbalanced {ch!r} in {expr!r}")
    if depth:
        fail(f"{where}: unclosed {depth[-1]!r} in {expr!r}")
    bare = re.sub(r'\{[^}]*\}|"[^"]*"', "", expr)  # label matchers and strings aside
    for name in re.findall(r"\b([a-zA-Z_][a-zA-Z0-9_]*)\s*\(", bare):
        if name not in FUNCTIONS:
            fail(f"{where}: unknown PromQL function {name}() in {expr!r}")
    metrics = set(re.findall(r"\bhet_[a-z0-9_]+", bare))
    if not metrics:
        fail(f"{where}: queries no het metric: {expr!r}")
    for metric in sorted(metrics):
        if metric not in declared:
            fail(f"{where}: {metric} is not served by het-run (not in {metrics_path})")
    return metrics


used = set()
dashboard = json.load(open(dashboard_path))
try:
    jsonschema.validate(dashboard, SCHEMA)
except jsonschema.ValidationError as e:
    fail(f"{dashboard_path}: {'/'.join(map(str, e.absolute_path))}: {e.message}")
ids = [p["id"] for p in dashboard["panels"]]
if len(set(ids)) != len(ids):
    fail(f"{dashboard_path}: panel ids repeat: {ids}")
for p in dashboard["panels"]:
    g = p["gridPos"]
    if g["x"] + g["w"] > 24:
        fail(f"{dashboard_path}: panel {p['id']} ({p['title']}) is wider than the 24 columns")
    refs = [t["refId"] for t in p["targets"]]
    if len(set(refs)) != len(refs):
        fail(f"{dashboard_path}: panel {p['id']}: refIds repeat: {refs}")
    for t in p["targets"]:
        used |= check_expr(f"{dashboard_path}: panel {p['id']} ({p['title']}) {t['refId']}", t["expr"])

rules = yaml.safe_load(open(rules_path))
alerts = 0
if not isinstance(rules, dict) or not isinstance(rules.get("groups"), list) or not rules["groups"]:
    fail(f"{rules_path}: no groups")
for group in rules["groups"]:
    if not group.get("name") or not isinstance(group.get("rules"), list):
        fail(f"{rules_path}: a group without a name or rules")
    for rule in group["rules"]:
        name = rule.get("alert")
        if not name or not re.match(r"^[A-Z][A-Za-z0-9]*$", name):
            fail(f"{rules_path}: group {group['name']}: a rule without a CamelCase alert name")
        where = f"{rules_path}: {name}"
        if not DURATION.match(str(rule.get("for", ""))):
            fail(f"{where}: 'for' is not a duration like 5m")
        if rule.get("labels", {}).get("severity") not in ("warning", "critical"):
            fail(f"{where}: severity is not warning or critical")
        if not rule.get("annotations", {}).get("summary"):
            fail(f"{where}: no summary annotation")
        used |= check_expr(where, str(rule.get("expr", "")))
        alerts += 1
print(f"dashboard: {len(dashboard['panels'])} panels; rules: {alerts} alerts; "
      f"{len(used)} het metrics queried, all served by het-run")
