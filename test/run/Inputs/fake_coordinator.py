"""A coordinator that misbehaves, for testing what a het-run --join agent
refuses: it listens on loopback, starts `het-run --join` against itself with
the job token in TOKEN_FILE, plays MODE, and prints the agent's output and
exit status.

  fake_coordinator.py MODE TOKEN_FILE [-- extra het-run options]

MODE:
  silent        accepts the connection and says nothing (a stalled coordinator)
  impostor      challenges, then seals its welcome with another token
  stall         proves the token, welcomes the agent, then says nothing more
  bad-digest    proves the token, then sends an executable whose bytes are not
                the SHA-256 it announces (tampered with on the way)
The protocol is docs/het-run.md's ("The control plane")."""
import hashlib
import hmac
import json
import secrets
import socket
import subprocess
import sys
import threading
import time

mode, token_file = sys.argv[1], sys.argv[2]
extra = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
token = open(token_file).readline().strip()


def mac(key, text):
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()


class Sealer:
    def __init__(self, key):
        self.key, self.seq = key, 0

    def seal(self, message):
        text = json.dumps(message, separators=(",", ":"))
        sealed = mac(self.key, "to agent\n" + str(self.seq) + "\n" + text)
        line = f"{sealed} {self.seq} {text}\n"
        self.seq += 1
        return line.encode()


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
port = listener.getsockname()[1]
agent = subprocess.Popen(["het-run", "--join", f"127.0.0.1:{port}", "--group", "onednn",
                          "--token-file", token_file] + extra,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
conn, _ = listener.accept()
reader = conn.makefile("rb")
hold = []  # keeps the connection open while the agent waits
if mode != "silent":
    nonce_c = secrets.token_hex(16)
    conn.sendall((json.dumps({"challenge": {"nonce": nonce_c, "protocol": 2}}) + "\n").encode())
    hello = json.loads(reader.readline())["hello"]
    key_token = token if mode != "impostor" else "an-impostor-does-not-know-the-token"
    key = mac(key_token, f"het-run session\n{nonce_c}\n{hello['nonce']}")
    sealer = Sealer(key)
    conn.sendall(sealer.seal({"welcome": "agent 0, 2 devices"}))
    if mode == "bad-digest":
        body = b"#!/bin/sh\necho tampered\n"
        announced = hashlib.sha256(b"what the coordinator built").hexdigest()
        conn.sendall(sealer.seal({"program": {"name": "train", "bytes": len(body), "sha256": announced}}) + body)
try:
    out, _ = agent.communicate(timeout=60)
except subprocess.TimeoutExpired:
    agent.kill()
    out, _ = agent.communicate()
    out += "\n[the agent was still waiting after 60 s]"
sys.stdout.write(out)
print(f"fake_coordinator.py: agent exited with {agent.returncode}")
