#!/usr/bin/env python3
"""Checks that each op section of a generated dialect doc has a summary line,
a description and an mlir example block; with a second argument (README.md),
that the op count the README states ("| N ops:") is the doc's.

usage: check_op_docs.py HetDialect.md [README.md]"""
import re, sys

text = open(sys.argv[1]).read()
sections = re.split(r"^### `(het\.[a-z_0-9]+)`", text, flags=re.M)
ops = list(zip(sections[1::2], sections[2::2]))
bad = []
for name, body in ops:
    body = body.split("\n#### ")[0]  # up to the attribute/operand tables
    if "```mlir" not in body:
        bad.append(f"{name}: no example")
    if len(re.sub(r"```.*?```", "", body, flags=re.S).split()) < 8:
        bad.append(f"{name}: description too short")
if not ops:
    bad.append("no ops found")
if len(sys.argv) > 2:
    stated = re.search(r"\| (\d+) ops:", open(sys.argv[2]).read())
    if not stated:
        bad.append(f"{sys.argv[2]}: no '| N ops:' statement")
    elif int(stated.group(1)) != len(ops):
        bad.append(f"{sys.argv[2]} says {stated.group(1)} ops, the dialect has {len(ops)}")
for b in bad:
    print("MISSING", b)
if not bad:
    print(f"every one of {len(ops)} ops has a summary, a description and an example")
sys.exit(1 if bad else 0)
