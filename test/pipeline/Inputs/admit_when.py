"""Runs het-run --metrics-port 0 --metrics-address 127.0.0.1 --token-file
TOKEN HET_RUN_ARGS and, the first time a line of its stderr matches PATTERN,
re-admits the lost devices of GROUP with `het-run --admit 127.0.0.1:PORT
--group GROUP --token-file TOKEN` (what an operator or a node agent does
when a node is back). het-run's stdout and stderr go to ours, the --admit
answer to stderr; exits with het-run's status.

With --forged, requests that must be refused go first, each answer to
stderr: no token, a wrong token, a request signed two minutes ago
(control_client.py); after the real admit, the replay of a request that was
accepted. het-run must refuse each (401/403) and change nothing: were one
of them taken, the real admit would find no lost device.

usage: admit_when.py [--forged] PATTERN GROUP -- HET_RUN_ARGS..."""
import os
import re
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
control = os.path.join(here, "..", "..", "run", "Inputs", "control_client.py")
argv = sys.argv[1:]
forged = argv[0] == "--forged"
if forged:
    argv = argv[1:]
sep = argv.index("--")
pattern, group = re.compile(argv[0]), argv[1]
token_file = os.path.join(tempfile.mkdtemp(prefix="admit-when-"), "job.token")
proc = subprocess.Popen(["het-run", "--metrics-port", "0", "--metrics-address", "127.0.0.1",
                         "--token-file", token_file] + argv[sep + 1:], stderr=subprocess.PIPE, text=True)


def say(tag, r):
    sys.stderr.write(f"{tag}: " + (r.stdout + r.stderr).strip() + "\n")
    sys.stderr.flush()


def client(*args):
    return subprocess.run([sys.executable, control, *args], capture_output=True, text=True)


port, admitted = None, False
for line in proc.stderr:
    sys.stderr.write(line)
    sys.stderr.flush()
    m = re.search(r"het-run: metrics at http://127\.0\.0\.1:(\d+)/metrics", line)
    if m:
        port = m.group(1)
    if not admitted and pattern.search(line):
        admitted = True
        if port is None:
            sys.exit("het-run did not say where it serves metrics")
        address = "127.0.0.1:" + port
        if forged:
            say("forged (no token)", client(address, "admit", group, "--no-token"))
            say("forged (wrong token)", client(address, "admit", group, "--token", "f" * 64))
            say("forged (stale)", client(address, "admit", group, "--token-file", token_file,
                                          "--age-s", "120"))
            # A request signed right and captured, sent twice: once, and as a replay.
            say("captured", client(address, "admit", group, "--token-file", token_file,
                                   "--save", token_file + ".captured", "--dry-run"))
        r = subprocess.run(["het-run", "--admit", address, "--group", group, "--token-file",
                            token_file], capture_output=True, text=True)
        say("admit", r)
        if forged:
            say("replayed", client(address, "replay", token_file + ".captured"))
            say("replayed", client(address, "replay", token_file + ".captured"))
sys.exit(proc.wait())
