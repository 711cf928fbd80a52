#!/usr/bin/env python3
"""Checks the docs' quotes of the main job's output against a real run.

A quote is a fenced block right after a marker line

    <!-- main-job-output: WHEN AND WHERE IT RAN -->

whose lines are lines the main job (scripts/run.sh) printed. Each quoted
line must match a line of the run's log, in the quoted order, with every
number (integer, decimal, exponent) standing for any number, and `...`
standing for any text. So the docs may quote one day's figures, dated in
the marker, but not lines that a newer program no longer prints or prints
otherwise. A marker without a reason, or a quote that matches nothing,
fails with the file, the line and the quote.

usage: main_job_excerpts.py --log RUN.log FILE.md [FILE.md ...]
"""
import argparse
import re
import sys

MARKER = re.compile(r"^<!--\s*main-job-output:\s*(?P<when>.*?)\s*-->\s*$")
NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def pattern(quoted: str) -> re.Pattern:
    """A regular expression for one quoted line: numbers and `...` are wild,
    runs of spaces match any run of spaces, the rest is literal."""
    out, pos = [], 0
    tokens = re.compile(r"\.\.\.|" + NUMBER.pattern + r"|\s+")
    for m in tokens.finditer(quoted):
        out.append(re.escape(quoted[pos:m.start()]))
        t = m.group(0)
        if t == "...":
            out.append(".*?")
        elif t.isspace():
            out.append(r"\s+")
        else:
            out.append(NUMBER.pattern)
        pos = m.end()
    out.append(re.escape(quoted[pos:]))
    return re.compile("^" + "".join(out).strip() + r"\s*$")


def quotes(path):
    """(line number, marker text, [(line number, quoted line)]) per quote."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j >= len(lines) or not lines[j].startswith("```"):
                yield i + 1, m.group("when"), None
                i = j
                continue
            body, k = [], j + 1
            while k < len(lines) and not lines[k].startswith("```"):
                if lines[k].strip():
                    body.append((k + 1, lines[k]))
                k += 1
            yield i + 1, m.group("when"), body
            i = k
        i += 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("files", nargs="+")
    a = p.parse_args()
    log = [line.rstrip() for line in open(a.log, encoding="utf-8", errors="replace")]
    failures, checked = 0, 0
    for path in a.files:
        for marker_line, when, body in quotes(path):
            where = f"{path}:{marker_line}"
            if body is None:
                print(f"{where}: a main-job-output marker must come right before a fenced block")
                failures += 1
                continue
            if not re.search(r"\d{4}-\d{2}-\d{2}", when):
                print(f"{where}: the marker must say when the quoted run was (a YYYY-MM-DD date): '{when}'")
                failures += 1
            at = 0
            for number, quoted in body:
                rx = pattern(quoted)
                hit = next((k for k in range(at, len(log)) if rx.match(log[k])), None)
                if hit is None:
                    print(f"{path}:{number}: the main job printed no such line (after the previous quote's):\n"
                          f"    {quoted.strip()}")
                    failures += 1
                else:
                    at = hit + 1
                checked += 1
    print(f"main-job excerpts: {checked} quoted lines checked against {a.log}, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
