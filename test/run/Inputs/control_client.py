"""A client of het-run's control endpoints that signs requests itself
(docs/het-run.md, "The control plane"): to test what het-run refuses, and
to show that the signature is plain HMAC-SHA256 anyone can compute.

  control_client.py HOST:PORT admit GROUP [--token T | --token-file F | --no-token]
                    [--age-s S] [--save F --dry-run]
  control_client.py HOST:PORT replay F        (send a saved request again, as is)
  control_client.py HOST:PORT get PATH [--token T | --token-file F] [--bearer]

Prints the HTTP status and the answer's first line."""
import argparse
import hashlib
import hmac
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def token_of(a):
    if a.token:
        return a.token
    if a.token_file:
        return open(a.token_file).readline().strip()
    return None


def signature(token, method, path, params, when, nonce):
    query = "&".join(f"{k}={v}" for k, v in sorted(params.items()))
    text = f"{method}\n{path}\n{query}\n{when}\n{nonce}"
    mac = hmac.new(token.encode(), text.encode(), hashlib.sha256).hexdigest()
    return f"t={when}, n={nonce}, mac={mac}"


def send(address, method, path, params, headers):
    data = urllib.parse.urlencode(params).encode() if method == "POST" else None
    url = f"http://{address}{path}" + ("" if data is not None or not params else "?" + urllib.parse.urlencode(params))
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("address")
    p.add_argument("what", choices=["admit", "replay", "get"])
    p.add_argument("arg")
    p.add_argument("--token")
    p.add_argument("--token-file")
    p.add_argument("--no-token", action="store_true")
    p.add_argument("--bearer", action="store_true")
    p.add_argument("--age-s", type=int, default=0)
    p.add_argument("--save")
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args()
    if a.what == "replay":
        saved = json.load(open(a.arg))
        status, body = send(a.address, saved["method"], saved["path"], saved["params"], saved["headers"])
    elif a.what == "get":
        token, headers = token_of(a), {}
        if token and a.bearer:
            headers["Authorization"] = "Bearer " + token
        elif token:
            headers["X-Het-Signature"] = signature(token, "GET", a.arg, {}, int(time.time()),
                                                   secrets.token_hex(16))
        status, body = send(a.address, "GET", a.arg, {}, headers)
    else:
        params, headers = {"group": a.arg}, {}
        token = None if a.no_token else token_of(a)
        if token:
            headers["X-Het-Signature"] = signature(token, "POST", "/admit", params,
                                                   int(time.time()) - a.age_s, secrets.token_hex(16))
        if a.save:
            with open(a.save, "w") as f:
                json.dump({"method": "POST", "path": "/admit", "params": params, "headers": headers}, f)
            os.chmod(a.save, 0o600)
        if a.dry_run:
            print("saved, not sent")
            return 0
        status, body = send(a.address, "POST", "/admit", params, headers)
    print(f"HTTP {status}: {body.strip().splitlines()[0] if body.strip() else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
