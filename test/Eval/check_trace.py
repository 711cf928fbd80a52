"""Checks a loss trace printed by `het-eval --steps` ("step <i> loss <v>").

  check_trace.py decreasing TRACE       every step's loss is below the previous
  check_trace.py equal A B --rtol R     two traces agree step by step
"""
import re
import sys


def read(path):
    losses = []
    with open(path) as f:
        for line in f:
            m = re.match(r"step (\d+) loss (\S+)", line)
            if m:
                losses.append(float(m.group(2)))
    if not losses:
        sys.exit(f"{path}: no 'step <i> loss <v>' lines")
    return losses


def main():
    mode = sys.argv[1]
    if mode == "decreasing":
        losses = read(sys.argv[2])
        for i in range(1, len(losses)):
            if not losses[i] < losses[i - 1]:
                sys.exit(f"loss did not decrease at step {i}: {losses[i - 1]} -> {losses[i]}")
        print(f"{len(losses)} steps, loss {losses[0]:.6g} -> {losses[-1]:.6g}, strictly decreasing")
    elif mode == "equal":
        a, b = read(sys.argv[2]), read(sys.argv[3])
        rtol = float(sys.argv[sys.argv.index("--rtol") + 1])
        if len(a) != len(b):
            sys.exit(f"traces have {len(a)} and {len(b)} steps")
        worst = max(abs(x - y) / max(abs(x), abs(y), 1e-30) for x, y in zip(a, b))
        if worst > rtol:
            sys.exit(f"traces differ: max relative difference {worst:.3e} > {rtol}")
        print(f"{len(a)} steps agree, max relative difference {worst:.3e}")
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
