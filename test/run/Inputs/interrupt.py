"""Signals het-run itself while its ranks run, then checks how it ends and
that none of its descendants (ranks and their children) survives it.

usage: interrupt.py SIGNAL RANKS het-run args...   (SIGNAL: INT, TERM or KILL)

RANKS: how many ranks het-run starts; fewer descendants than that when the
signal is sent fails the check (it would vacuously find none left)."""
import os
import signal
import subprocess
import sys
import time


def descendants(pid):
    out = []
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        return out
    for k in kids:
        out.append(k)
        out.extend(descendants(k))
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


sig = getattr(signal, "SIG" + sys.argv[1])
ranks = int(sys.argv[2])
proc = subprocess.Popen(sys.argv[3:])
tree = []
deadline = time.monotonic() + 10
while len(tree) < ranks and time.monotonic() < deadline:  # ranks start asynchronously
    time.sleep(0.1)
    tree = descendants(proc.pid)
time.sleep(0.2)
tree = descendants(proc.pid)
print(f"het-run has {len(tree)} descendant processes", flush=True)
if len(tree) < ranks:
    proc.kill()
    sys.exit(f"het-run started {len(tree)} descendant processes, expected at least {ranks} ranks: "
             "nothing to check")
proc.send_signal(sig)
t0 = time.monotonic()
rc = proc.wait(timeout=30)
print(f"het-run exited {rc} {time.monotonic() - t0:.3f} s after SIG{sys.argv[1]}", flush=True)
for _ in range(100):  # PDEATHSIG and reaping are asynchronous
    left = [p for p in tree if alive(p)]
    if not left:
        break
    time.sleep(0.05)
if left:
    for p in left:
        os.kill(p, signal.SIGKILL)
    sys.exit(f"still running after het-run ended: {left}")
print("no rank left running", flush=True)
