"""Starts `het-run -n 1 --metrics-port 0 --token-file TOKEN HET_RUN_OPTS
sleep 30`, and while it runs asks its views and its control endpoint with
and without the job token (control_client.py, het-run --status); prints
each answer, then stops the job.

usage: views_auth.py TOKEN_FILE [HET_RUN_OPTS...]"""
import os
import re
import signal
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
token_file, opts = sys.argv[1], sys.argv[2:]
proc = subprocess.Popen(["het-run", "-n", "1", "--metrics-port", "0", "--token-file", token_file] + opts +
                        ["sleep", "30"], stderr=subprocess.PIPE, text=True)
address = None
for line in proc.stderr:
    sys.stdout.write(line)
    m = re.search(r"het-run: metrics at http://([0-9.]+:\d+)/metrics", line)
    if m:
        address = m.group(1)
        break
if address is None:
    sys.exit("het-run did not say where it serves metrics")


def run(tag, args):
    r = subprocess.run(args, capture_output=True, text=True)
    print(f"{tag}: exit {r.returncode}: " + (r.stdout + r.stderr).strip().splitlines()[0])


client = [sys.executable, os.path.join(here, "control_client.py"), address]
run("metrics, no token", client + ["get", "/metrics"])
run("metrics, bearer token", client + ["get", "/metrics", "--token-file", token_file, "--bearer"])
run("metrics, wrong bearer", client + ["get", "/metrics", "--token", "0" * 64, "--bearer"])
run("status, signed", client + ["get", "/status", "--token-file", token_file])
run("het-run --status, with the token", ["het-run", "--status", address, "--token-file", token_file])
env = dict(os.environ)
env.pop("HETCCL_TOKEN", None)
r = subprocess.run(["het-run", "--status", address], capture_output=True, text=True, env=env)
print(f"het-run --status, no token: exit {r.returncode}: " + (r.stdout + r.stderr).strip().splitlines()[0])
run("admit, no token", client + ["admit", "mlir", "--no-token"])
proc.send_signal(signal.SIGTERM)
rest = proc.stderr.read()
proc.wait()
sys.stdout.write("".join(l for l in rest.splitlines(True) if "refused" in l))
