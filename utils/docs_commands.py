#!/usr/bin/env python3
"""Runs the shell commands of README.md and docs/**/*.md as written.

Every command a reader is told to type must work when typed from the
repository root; this script types them.

Rules
-----
Which blocks run.
  Fenced blocks whose language (the info string's first word) is ``sh``,
  ``bash``, ``shell`` or ``console``. In sh/bash/shell blocks every line is a command except blank
  lines and ``#`` comment lines. In console blocks only lines starting with
  ``$ `` are commands (the prompt is stripped); the other lines are output
  and are not checked. Untagged blocks and other languages (``c``, ``json``,
  ``mlir``, ``python``, ...) never run: use an untagged block for a usage
  synopsis with placeholders (``[--top K]``, ``C.json``) and a ``sh`` block
  for something to type.

What one command is.
  A line, joined with the following lines while it ends in ``\\``, ``|``,
  ``&&`` or ``||``. It is reported by the file and line where it starts.

Skipping a block.
  ``<!-- docs-test: skip (REASON) -->`` as the last non-blank line before
  the fence. The reason is required and printed in the summary. Use it only
  for what cannot run in a test on one CPU-only machine: a GPU or NPU, a
  Kubernetes cluster, several machines, root and apt installs (the setup
  and full test scripts), or a benchmark that needs a minute or more to
  measure anything. Everything else should be made small enough to run in
  seconds in the docs themselves (a reader tries it; this test runs all of
  it in about a minute on 2 cores). A marker with no reason, or one not directly before a
  runnable fence, is an error.

Where commands run.
  Each markdown file gets its own scratch directory under ``--work-dir``
  holding a symlink to every top-level entry of the repository (``build``,
  ``examples``, ``.venv``, ...), so ``build/bin/het-opt`` and
  ``examples/...`` resolve as from the repository root while the files the
  commands write (``-o mlp``, ``ck/``, ``p.json``) land in the scratch
  directory, not in the checkout. A file's commands run in document order in
  one shell session: the working directory and exported variables carry
  from one command to the next (each command runs in its own ``bash -c``
  with ``pipefail``; ``pwd`` and the environment are saved after it).
  ``PATH`` loses the checkout's directories (lit puts ``build/bin`` on it;
  a reader's shell does not), so commands must say ``build/bin/het-opt``.

``/tmp``.
  Every ``/tmp`` path in a command becomes ``<scratch>/tmp`` and ``TMPDIR``
  points there, so runs (and parallel lit runs) do not collide or litter.

Failures and time.
  A command fails on a non-zero exit or after ``--timeout`` seconds (its
  process group is killed); the rest of that file is then not run, the other
  files still are. The summary lists per file the commands run, skipped
  (with reasons), failed and not reached, and the time; each failure names
  file, line and command and shows the output's last lines. Exit status 1 on
  any failure or malformed marker, 0 otherwise.

usage: docs_commands.py [--work-dir DIR] [--timeout S] [--list] [FILE.md ...]
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_LANGS = {"sh", "bash", "shell", "console"}
SKIP_RE = re.compile(r"^<!--\s*docs-test:\s*skip\s*(?:\((?P<reason>.*)\))?\s*-->\s*$")
ANY_MARKER_RE = re.compile(r"<!--\s*docs-test:")
FENCE_RE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<info>[^`\s]*)")
CONTINUES = ("\\", "|", "&&", "||")
TMP_RE = re.compile(r"(?<![\w./-])/tmp(?![\w.-])")
TAIL_LINES = 40


@dataclass
class Command:
    line: int
    text: str


@dataclass
class Block:
    line: int
    lang: str
    commands: list = field(default_factory=list)
    skip: str = None  # the reason, when marked


def parse(path):
    """Returns (blocks, errors) of the runnable fenced blocks of `path`."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, errors = [], []
    pending = None  # (line, reason) of a skip marker not yet attached
    i = 0
    while i < len(lines):
        text = lines[i]
        m = FENCE_RE.match(text)
        if not m:
            if ANY_MARKER_RE.search(text):
                sm = SKIP_RE.match(text.strip())
                if not sm or not (sm.group("reason") or "").strip():
                    errors.append(f"{path}:{i + 1}: malformed marker, expected "
                                  f"'<!-- docs-test: skip (reason) -->': {text.strip()}")
                else:
                    pending = (i + 1, sm.group("reason").strip())
            elif text.strip() and pending:
                errors.append(f"{path}:{pending[0]}: skip marker is not directly before a fence")
                pending = None
            i += 1
            continue
        indent, fence, lang = len(m.group("indent")), m.group("fence"), m.group("info").lower()
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            raw = lines[j]
            body.append((j + 1, raw[indent:] if indent == 0 or raw[:indent].isspace() else raw.lstrip()))
            j += 1
        if lang in RUN_LANGS:
            block = Block(i + 1, lang, commands_of(body, lang == "console"))
            if pending:
                block.skip = pending[1]
            blocks.append(block)
        elif pending:
            errors.append(f"{path}:{pending[0]}: skip marker before a '{lang or 'untagged'}' "
                          "block, which never runs")
        pending = None
        i = j + 1
    if pending:
        errors.append(f"{path}:{pending[0]}: skip marker at the end of the file")
    return blocks, errors


def commands_of(body, console):
    commands, current = [], None
    for line, text in body:
        stripped = text.strip()
        if current is not None:
            current.text += "\n" + text
        elif console:
            if not stripped.startswith("$ "):
                continue
            current = Command(line, stripped[2:])
        else:
            if not stripped or stripped.startswith("#"):
                continue
            current = Command(line, text)
        if not current.text.rstrip().endswith(CONTINUES):
            commands.append(current)
            current = None
    if current is not None:
        commands.append(current)
    return commands


def mirror(scratch):
    """A directory that looks like the repository root but takes writes."""
    os.makedirs(os.path.join(scratch, "tmp"))
    for name in sorted(os.listdir(REPO)):
        if name != ".git":
            os.symlink(os.path.join(REPO, name), os.path.join(scratch, name))


def user_path():
    """PATH without the checkout's directories (lit puts build/bin on it): a
    reader's shell does not have them, so `het-opt` without `build/bin/`
    must fail here too."""
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not os.path.realpath(d).startswith(os.path.realpath(REPO) + os.sep)]
    return os.pathsep.join(keep)


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_command(cmd, cwd, env, scratch, timeout, log):
    """Runs one command; returns (rc or None on timeout, seconds, cwd, env)."""
    state = os.path.join(scratch, ".docs-test-state")
    text = TMP_RE.sub(os.path.join(scratch, "tmp"), cmd.text)
    script = (f"set -o pipefail\n{text}\n__docs_rc=$?\n"
              f"pwd > '{state}.cwd'; env -0 > '{state}.env'\nexit $__docs_rc\n")
    start = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait()
            rc = None
        # Ranks or servers a command left behind must not outlive it.
        kill_group(proc)
    seconds = time.monotonic() - start
    try:
        cwd = open(state + ".cwd").read().strip() or cwd
        raw = open(state + ".env", "rb").read().split(b"\0")
        env = dict(e.decode(errors="replace").split("=", 1) for e in raw if b"=" in e)
    except OSError:
        pass
    return rc, seconds, cwd, env


def tail(log, n=TAIL_LINES):
    data = open(log, "rb").read().decode(errors="replace").rstrip("\n").split("\n")
    cut = data[-n:]
    head = [f"  ... ({len(data) - n} lines above)"] if len(data) > n else []
    return "\n".join(head + ["  | " + line for line in cut])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="*", help="markdown files (default: README.md docs/**/*.md)")
    p.add_argument("--work-dir", help="scratch root, emptied first (default: a new temp dir)")
    p.add_argument("--timeout", type=float, default=120, help="seconds per command (default 120)")
    p.add_argument("--list", action="store_true", help="print the commands and markers, run nothing")
    a = p.parse_args()

    files = [os.path.abspath(f) for f in a.files]
    if not files:
        files = [os.path.join(REPO, "README.md")]
        for root, dirs, names in os.walk(os.path.join(REPO, "docs")):
            dirs.sort()
            files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".md")]

    parsed, errors = [], []
    for f in files:
        blocks, errs = parse(f)
        parsed.append((os.path.relpath(f, REPO), blocks))
        errors += errs
    for e in errors:
        print("ERROR", e)

    if a.list:
        for rel, blocks in parsed:
            for b in blocks:
                if b.skip:
                    print(f"{rel}:{b.line}: SKIP block ({b.skip})")
                for c in b.commands:
                    print(f"{rel}:{c.line}: {'skip' if b.skip else 'run '} {c.text}")
        return 1 if errors else 0

    work = os.path.abspath(a.work_dir) if a.work_dir else tempfile.mkdtemp(prefix="docs-commands-")
    if a.work_dir and os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work, exist_ok=True)

    summary, failures, total_run = [], [], 0
    for n, (rel, blocks) in enumerate(parsed):
        if not any(b.commands for b in blocks):
            continue
        name = rel if not rel.startswith("..") else os.path.basename(rel)
        scratch = os.path.join(work, f"{n:02d}-" + re.sub(r"[^\w.-]", "_", name))
        mirror(scratch)
        env = dict(os.environ, TMPDIR=os.path.join(scratch, "tmp"), PATH=user_path())
        cwd = scratch
        ran = skipped = failed = unreached = 0
        reasons, start, stopped = [], time.monotonic(), False
        for b in blocks:
            if b.skip:
                skipped += len(b.commands)
                reasons.append(f"line {b.line}, {len(b.commands)} command(s): {b.skip}")
                continue
            for c in b.commands:
                if stopped:
                    unreached += 1
                    continue
                log = os.path.join(scratch, f".docs-test-line{c.line}.log")
                print(f"[{rel}:{c.line}] {c.text.splitlines()[0]}", flush=True)
                rc, secs, cwd, env = run_command(c, cwd, env, scratch, a.timeout, log)
                ran += 1
                if rc != 0:
                    failed += 1
                    stopped = True
                    why = f"timed out after {a.timeout:.0f} s" if rc is None else f"exit {rc}"
                    failures.append(f"FAIL {rel}:{c.line}: {why} after {secs:.1f} s\n"
                                    f"  $ {c.text}\n{tail(log)}")
                    print(f"  -> {why}", flush=True)
                else:
                    print(f"  -> ok, {secs:.1f} s", flush=True)
        total_run += ran
        summary.append((rel, ran, skipped, failed, unreached, time.monotonic() - start, reasons))

    print("\n" + "\n\n".join(failures) if failures else "")
    print("summary (commands):")
    for rel, ran, skipped, failed, unreached, secs, reasons in summary:
        extra = f", {unreached} not reached" if unreached else ""
        print(f"  {rel}: {ran} run, {skipped} skipped, {failed} failed{extra} ({secs:.0f} s)")
        for r in reasons:
            print(f"      skipped {r}")
    if total_run == 0:
        print("ERROR no command ran")
        errors.append("none ran")
    bad = len(failures) + len(errors)
    print(f"{'FAILED' if bad else 'PASSED'}: {len(failures)} failed command(s), "
          f"{len(errors)} marker error(s); scratch in {work}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
