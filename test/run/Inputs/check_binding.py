"""Checks the CPUs het-run gave its ranks (lines 'rank R CPUS' from
print_cpus, in any order) against CoreBinding.h's rule for this host:
  check_binding.py core|none NRANKS FILE
core: with NRANKS >= n allowed CPUs, rank r has CPU r mod n; with fewer,
an equal block of n // NRANKS CPUs; none: every rank has them all."""
import os
import sys

mode, nranks, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
allowed = sorted(os.sched_getaffinity(0))
n = len(allowed)
got = {}
for line in open(path):
    words = line.split("] ", 1)[-1].split()  # het-run prefixes "[rank R] "
    if len(words) == 3 and words[0] == "rank":
        got[int(words[1])] = [int(c) for c in words[2].split(",")]
if sorted(got) != list(range(nranks)):
    sys.exit(f"ranks reported: {sorted(got)}, expected 0..{nranks - 1}")
for r in range(nranks):
    if mode == "none":
        want = allowed
    elif nranks >= n:
        want = [allowed[r % n]]
    else:
        each = n // nranks
        want = allowed[r * each:(r + 1) * each]
    if got[r] != want:
        sys.exit(f"rank {r} runs on CPUs {got[r]}, expected {want} ({mode}, {nranks} ranks, {n} CPUs)")
print(f"binding ok: {mode}, {nranks} ranks")
