#!/usr/bin/env python3
"""Test-maintenance helper: after a shape-rule error, MLIR's InferTypeOpInterface
check adds "failed to infer returned types". This script reads het-opt's
-verify-diagnostics output and adds that expectation where it is missing."""
import re, subprocess, sys

def fix(path, het_opt):
    r = subprocess.run([het_opt, path, "-split-input-file", "-verify-diagnostics"],
                       capture_output=True, text=True)
    lines = open(path).read().split("\n")
    targets = set()
    for m in re.finditer(r"within split at [^:]+:(\d+) offset :(\d+):\d+: error: unexpected error: '[\w.]+' op failed to infer returned types", r.stderr):
        targets.add(int(m.group(1)) + int(m.group(2)) - 2)  # 0-based index
    for idx in sorted(targets, reverse=True):
        prev = lines[idx - 1]
        assert "expected-error @+1" in prev, (path, idx, prev)
        lines[idx - 1] = prev.replace("@+1", "@+2")
        indent = re.match(r"\s*", lines[idx]).group(0)
        lines.insert(idx, indent + "// expected-error @+1 {{failed to infer returned types}}")
    open(path, "w").write("\n".join(lines))
    return len(targets)

if __name__ == "__main__":
    for p in sys.argv[2:]:
        print(p, fix(p, sys.argv[1]))
