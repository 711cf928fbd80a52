"""Replays the hetccl calls every rank of a pipeline made (HETRT_COMM_TRACE,
lib/Runtime/CommTrace.h) and checks that the schedule and the runtime's
posting rule cannot deadlock, whatever the transport buffers:

* every message matches: the k-th send from rank a to rank b has the size of
  the k-th receive at b from a (hetccl matches them in order), and the
  members of a communicator make the same collectives in the same order;
* eager sends (a send completes at once, buffered) finish, and so do
  rendezvous sends (a send completes only when its receive is posted, as
  with messages larger than any buffer): a rank's group of sends and
  receives completes once every peer has posted the matching call, a
  collective once every member has reached it.

usage: check_deadlock.py DIR [DIR ...]
A DIR holds rank<k>.trace files, or directories named *.traces that do.
Prints one line per trace directory; exits 1 naming the first problem (for a
deadlock: each stuck rank, its call, and whom it waits for)."""
import glob
import os
import re
import sys


class Op:
    def __init__(self, rank, index, step, kind, text):
        self.rank, self.index, self.step, self.kind, self.text = rank, index, step, kind, text
        self.sends, self.receives = [], []  # (peer, bytes)
        self.members, self.bytes, self.what = (), 0, ""

    def __str__(self):
        return f"rank {self.rank} step {self.step} call {self.index}: {self.text}"


def read(directory):
    ranks = {}
    for path in glob.glob(os.path.join(directory, "rank*.trace")):
        rank = int(re.search(r"rank(\d+)\.trace$", path).group(1))
        ops, step = [], None
        for line in open(path):
            words = line.split()
            if not words:
                continue
            if words[0] == "step":
                step = int(words[1])
                continue
            op = Op(rank, len(ops), step, words[0], line.strip())
            if words[0] == "group":
                target = None
                for w in words[1:]:
                    if w in ("send", "recv"):
                        target = op.sends if w == "send" else op.receives
                    else:
                        peer, size = w.split(":")
                        target.append((int(peer), int(size)))
            elif words[0] == "collective":
                op.what, op.members, op.bytes = words[1], tuple(map(int, words[2].split(","))), int(words[3])
            else:
                sys.exit(f"{path}: unknown line {line!r}")
            ops.append(op)
        ranks[rank] = ops
    if not ranks:
        sys.exit(f"{directory}: no rank*.trace files")
    return ranks


def match(ranks, directory):
    """For each op: the partner ops it depends on (rank, op index)."""
    sends, receives, collectives = {}, {}, {}
    for rank, ops in ranks.items():
        for op in ops:
            for peer, size in op.sends:
                sends.setdefault((rank, peer), []).append((op, size))
            for peer, size in op.receives:
                receives.setdefault((peer, rank), []).append((op, size))
            if op.kind == "collective":
                if rank not in op.members:
                    sys.exit(f"{directory}: {op}: the rank is not among the members")
                collectives.setdefault((op.members, rank), []).append(op)
    waits = {}  # (rank, index) -> {kind: [(peer rank, peer op index)]}
    def need(op, kind, other):
        waits.setdefault((op.rank, op.index), {"send": [], "recv": [], "collective": []})[kind].append(
            (other.rank, other.index))
    for pair in set(sends) | set(receives):
        s, r = sends.get(pair, []), receives.get(pair, [])
        if len(s) != len(r):
            sys.exit(f"{directory}: rank {pair[0]} sends {len(s)} messages to rank {pair[1]}, "
                     f"which receives {len(r)}")
        for k, ((sop, ssize), (rop, rsize)) in enumerate(zip(s, r)):
            if ssize != rsize:
                sys.exit(f"{directory}: message {k} from rank {pair[0]} to rank {pair[1]}: "
                         f"{ssize} bytes sent ({sop}), {rsize} expected ({rop})")
            need(sop, "send", rop)
            need(rop, "recv", sop)
    for (members, rank), ops in collectives.items():
        for other in members:
            theirs = collectives.get((members, other), [])
            if len(theirs) != len(ops):
                sys.exit(f"{directory}: ranks {rank} and {other} of {members} make {len(ops)} and "
                         f"{len(theirs)} collectives on it")
            for mine, their in zip(ops, theirs):
                if (mine.what, mine.bytes) != (their.what, their.bytes):
                    sys.exit(f"{directory}: collectives out of order: {mine} / {their}")
                if other != rank:
                    need(mine, "collective", their)
    return waits


def replay(ranks, waits, eager):
    """Advances every rank whose current call can complete; returns the
    stuck calls (empty when every rank finished)."""
    position = {rank: 0 for rank in ranks}
    def blocker(rank):
        op = ranks[rank][position[rank]]
        need = waits.get((rank, op.index), {"send": [], "recv": [], "collective": []})
        kinds = ("recv", "collective") if eager else ("send", "recv", "collective")
        for kind in kinds:
            for peer, index in need[kind]:
                if position[peer] < index:
                    return op, kind, ranks[peer][index]
        return None
    progress = True
    while progress:
        progress = False
        for rank, ops in ranks.items():
            while position[rank] < len(ops) and blocker(rank) is None:
                position[rank] += 1
                progress = True
    return [blocker(rank) for rank, ops in ranks.items() if position[rank] < len(ops)]


directories = []
for given in sys.argv[1:]:
    if glob.glob(os.path.join(given, "rank*.trace")):
        directories.append(given)
    else:
        directories += sorted(glob.glob(os.path.join(given, "*.traces")))
if not directories:
    sys.exit(f"no traces under {' '.join(sys.argv[1:])}")
status = 0
for directory in directories:
    ranks = read(directory)
    waits = match(ranks, directory)
    calls = sum(len(ops) for ops in ranks.values())
    for eager in (True, False):
        stuck = replay(ranks, waits, eager)
        if stuck:
            print(f"{directory}: DEADLOCK with {'eager' if eager else 'rendezvous'} sends:")
            for op, kind, other in stuck:
                print(f"  {op}\n    waits for its {kind}: {other}")
            status = 1
            break
    else:
        print(f"{directory}: {len(ranks)} ranks, {calls} calls: no deadlock with eager or rendezvous sends")
sys.exit(status)
