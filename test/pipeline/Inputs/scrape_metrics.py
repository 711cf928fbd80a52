"""Runs a job under het-run --metrics-port 0 --metrics-log LOG, scrapes
/metrics while it trains, parses the Prometheus text strictly (every line a
HELP, a TYPE or a sample of a declared family with well-formed labels and a
number), checks the job's and each rank's series, prints `het-run --status`
and, once the job ends, checks the JSON-lines log.

usage: scrape_metrics.py OUT_PREFIX --ranks N --steps S -- HET_RUN_ARGS...
(HET_RUN_ARGS: what follows `het-run --metrics-port 0 ...`, the program and
its arguments, which must include --steps S)"""
import json
import re
import subprocess
import sys
import time
import urllib.request

argv = sys.argv[1:]
sep = argv.index("--")
prefix, opts, job = argv[0], argv[1:sep], argv[sep + 1:]
ranks = int(opts[opts.index("--ranks") + 1])
steps = int(opts[opts.index("--steps") + 1])
log = prefix + ".jsonl"

proc = subprocess.Popen(["het-run", "--metrics-port", "0", "--metrics-address", "127.0.0.1",
                         "--metrics-log", log] + job,
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
port = None
for line in proc.stderr:
    m = re.search(r"het-run: metrics at http://127\.0\.0\.1:(\d+)/metrics", line)
    if m:
        port = int(m.group(1))
        break
if port is None:
    sys.exit("het-run did not say where it serves metrics")

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


def parse(text):
    families, samples = {}, []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            if kind not in ("gauge", "counter"):
                sys.exit(f"line {n}: unknown type {kind!r}")
            families[name] = kind
            continue
        m = SAMPLE.match(line)
        if not m:
            sys.exit(f"line {n} is not Prometheus text: {line!r}")
        name, labels = m.group(1), {}
        if name not in families:
            sys.exit(f"line {n}: sample of undeclared family {name}")
        body = m.group(3) or ""
        pos = 0
        while pos < len(body):
            lm = LABEL.match(body, pos)
            if not lm:
                sys.exit(f"line {n}: bad labels {body!r}")
            labels[lm.group(1)] = lm.group(2)
            pos = lm.end()
        samples.append((name, labels, float(m.group(4))))
    return families, samples


deadline = time.time() + 120
while True:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    families, samples = parse(text)
    job_step = [v for n, _, v in samples if n == "het_job_step"][0]
    up = [v for n, _, v in samples if n == "het_rank_up"]
    if job_step >= 5 and len(up) == ranks and all(v == 1 for v in up):
        break
    if time.time() > deadline or proc.poll() is not None:
        sys.exit(f"the job did not report 5 steps on {ranks} running ranks while it ran:\n{text}")
    time.sleep(0.05)

by = {}
for name, labels, value in samples:
    by.setdefault(name, []).append((labels, value))
for family in ["het_rank_step", "het_rank_step_seconds", "het_rank_samples_per_second",
               "het_rank_collective_seconds_total", "het_rank_p2p_seconds_total",
               "het_rank_checkpoint_stall_seconds_total", "het_rank_resident_memory_bytes"]:
    if len(by.get(family, [])) != ranks:
        sys.exit(f"{family}: {len(by.get(family, []))} series, expected {ranks}")
    for labels, value in by[family]:
        if set(labels) != {"rank", "group", "kind", "stage", "replica", "part"} or value < 0:
            sys.exit(f"{family}{labels} {value}: bad labels or negative")
if len(by["het_rank_loss"]) != 1 or not by["het_rank_loss"][0][1] > 0:
    sys.exit(f"het_rank_loss: {by['het_rank_loss']}")
if not by["het_job_samples_per_second"][0][1] > 0:
    sys.exit("het_job_samples_per_second is not positive")
if not all(v > 1 << 20 for _, v in by["het_rank_resident_memory_bytes"]):
    sys.exit("a rank reports less than 1 MiB resident")
# A planned pipeline's ranks report the plan's predicted step time (what
# deploy/prometheus's "slower than planned" alert compares with).
for labels, value in by.get("het_rank_predicted_step_seconds", []):
    if set(labels) != {"rank", "group", "kind", "stage", "replica", "part"} or not value > 0:
        sys.exit(f"het_rank_predicted_step_seconds{labels} {value}: bad labels or not positive")
# The text, for the checks of deploy/'s dashboard and alert rules.
open(prefix + ".prom", "w").write(text)
print(f"scraped {len(samples)} samples of {len(families)} families while the job ran "
      f"(step {int(job_step)} of {steps}); {ranks} ranks up, one loss")

status = subprocess.run(["het-run", "--status", f"127.0.0.1:{port}"], capture_output=True,
                        text=True)
if status.returncode != 0:
    sys.exit("het-run --status failed: " + status.stderr)
open(prefix + ".status", "w").write(status.stdout)

rest = proc.stderr.read()
if proc.wait() != 0:
    sys.exit("the job failed:\n" + rest)

# The log: one attempt, every rank's every step, the attempt's end.
events, seen = [], {}
for line in open(log):
    record = json.loads(line)
    if "event" in record:
        events.append(record["event"])
    else:
        seen.setdefault(record["rank"], set()).add(record["step"])
if events != ["attempt", "attempt_end"]:
    sys.exit(f"log events {events}")
for r in range(ranks):
    if seen.get(str(r)) != set(range(steps)):
        sys.exit(f"rank {r} logged {len(seen.get(str(r), ()))} of {steps} steps")
print(f"log: {ranks} ranks x {steps} steps, one attempt")
