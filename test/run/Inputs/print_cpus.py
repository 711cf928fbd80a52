"""A rank that prints its LOCAL_RANK and the CPUs it may run on."""
import os

print("rank", os.environ["LOCAL_RANK"], ",".join(str(c) for c in sorted(os.sched_getaffinity(0))))
