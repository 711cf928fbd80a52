"""A multi-node elastic job on this host: a coordinator (het-run --elastic
--coordinate 127.0.0.1:0 HET_RUN_ARGS) and one het-run --join agent per
--agent GROUP:HOST[:TOKEN] (HETCCL_HOST=HOST, so the agents' ranks talk over TCP as
separate machines would). The job token: HETCCL_TOKEN if our environment
has it, else the coordinator writes a fresh one to OUT.token
(--token-file), which the agents read; an agent given a TOKEN gets
HETCCL_TOKEN=TOKEN instead (another job's, to be refused). Events: --on PATTERN ACTION, once, when a line of
the coordinator's or an agent's output matches PATTERN: "join GROUP:HOST"
starts another agent, "kill GROUP" SIGKILLs the newest agent of GROUP (its
ranks die with it, as with a machine gone). The coordinator's output goes to
our stderr; agent K's to OUT.agentK.log. Prints each agent's exit status and
exits with the coordinator's.

usage: agents.py OUT --agent G:H [--agent ...] [--on PATTERN ACTION ...] -- HET_RUN_ARGS..."""
import os
import re
import signal
import subprocess
import sys
import threading
import time

argv = sys.argv[1:]
sep = argv.index("--")
opts, job = argv[:sep], argv[sep + 1:]
out = opts[0]
agents_wanted, events = [], []
i = 1
while i < len(opts):
    if opts[i] == "--agent":
        agents_wanted.append(opts[i + 1])
        i += 2
    elif opts[i] == "--on":
        events.append([re.compile(opts[i + 1]), opts[i + 2], False])
        i += 3
    else:
        sys.exit(f"unknown option {opts[i]}")

lock = threading.Lock()
agents = []  # (group:host, Popen, log path)
port = None


def start_agent(spec):
    group, host, *token = spec.split(":")
    log = f"{out}.agent{len(agents)}.log"
    env = dict(os.environ, HETCCL_HOST=host)
    if token:
        env["HETCCL_TOKEN"] = token[0]
    p = subprocess.Popen(["het-run", "--join", f"127.0.0.1:{port}", "--group", group,
                          "--join-timeout-s", "60", "--token-file", token_file],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    agents.append((spec, p, log))
    threading.Thread(target=pump, args=(p.stdout, open(log, "w")), daemon=True).start()


def act(line):
    with lock:
        for e in events:
            if e[2] or not e[0].search(line):
                continue
            e[2] = True
            what, arg = e[1].split(" ", 1)
            if what == "join":
                start_agent(arg)
            elif what == "kill":
                victim = [a for a in agents if a[0].split(":")[0] == arg and a[1].poll() is None][-1]
                victim[1].send_signal(signal.SIGKILL)
                sys.stderr.write(f"agents.py: SIGKILLed the agent {victim[0]}\n")


def pump(stream, sink):
    for line in stream:
        sink.write(line)
        sink.flush()
        act(line)


token_file = out + ".token"
if os.path.exists(token_file):
    os.unlink(token_file)  # a fresh token per run
coordinator = subprocess.Popen(["het-run", "--elastic", "--coordinate", "127.0.0.1:0",
                                "--token-file", token_file] + job,
                               stderr=subprocess.PIPE, text=True)
for line in coordinator.stderr:
    sys.stderr.write(line)
    m = re.search(r"coordinating at 127\.0\.0\.1:(\d+);", line)
    if m:
        port = m.group(1)
        with lock:
            for spec in agents_wanted:
                start_agent(spec)
    act(line)
status = coordinator.wait()
deadline = time.time() + 30
for spec, p, log in agents:
    try:
        code = p.wait(timeout=max(0.1, deadline - time.time()))
    except subprocess.TimeoutExpired:
        p.kill()
        code = "still running (killed)"
    sys.stderr.write(f"agents.py: agent {spec} exited with {code}\n")
sys.exit(status)
