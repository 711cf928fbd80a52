"""Runs het-run --metrics-port 0 --metrics-address 127.0.0.1 HET_RUN_ARGS and,
the first time a line of its stderr matches PATTERN, re-admits the lost
devices of GROUP with `het-run --admit 127.0.0.1:PORT --group GROUP` (what
an operator or a node agent does when a node is back). het-run's stdout and
stderr go to ours, the --admit answer to stderr; exits with het-run's status.

usage: admit_when.py PATTERN GROUP -- HET_RUN_ARGS..."""
import re
import subprocess
import sys

argv = sys.argv[1:]
sep = argv.index("--")
pattern, group = re.compile(argv[0]), argv[1]
proc = subprocess.Popen(["het-run", "--metrics-port", "0", "--metrics-address", "127.0.0.1"] +
                        argv[sep + 1:], stderr=subprocess.PIPE, text=True)
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
        r = subprocess.run(["het-run", "--admit", "127.0.0.1:" + port, "--group", group],
                           capture_output=True, text=True)
        sys.stderr.write("admit: " + (r.stdout + r.stderr).strip() + "\n")
        sys.stderr.flush()
sys.exit(proc.wait())
