"""Checks that every rank of every given het-run output printed the same
final parameter checksum ("[rank k] final step N params sha256 X").

usage: same_checksums.py NRANKS OUT [OUT...]"""
import re
import sys

nranks = int(sys.argv[1])
seen = {}
for path in sys.argv[2:]:
    ranks = {}
    for line in open(path):
        m = re.match(r"\[rank (\d+)\] final step (\d+) params sha256 ([0-9a-f]{64})$", line.strip())
        if m:
            ranks[int(m.group(1))] = m.group(3)
    if sorted(ranks) != list(range(nranks)):
        sys.exit(f"{path}: final checksums from ranks {sorted(ranks)}, expected 0..{nranks - 1}")
    for r, h in ranks.items():
        seen.setdefault(h, []).append(f"{path}:rank{r}")
if len(seen) != 1:
    sys.exit("checksums differ: " + "; ".join(f"{h[:16]}: {w}" for h, w in seen.items()))
print("identical final checksum", next(iter(seen)), "on", sum(len(v) for v in seen.values()), "ranks")
