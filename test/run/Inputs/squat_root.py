"""Runs a rank after trying to take its job's root port, as any other process
on the host could between het-run's start and rank 0's bind.

Each rank prints what it found. A port het-run only picked is free here, and
this script then holds it (in a child that outlives the exec) for the job's
life: rank 0's bind fails with "Address already in use". A port het-run
already listens on cannot be bound, and the job runs.
"""
import errno
import os
import socket
import sys

rank = os.environ["RANK"]
host, port = os.environ["HETCCL_ROOT"].rsplit(":", 1)
print(f"rank {rank}: HETCCL_ROOT_FD {'set' if os.environ.get('HETCCL_ROOT_FD') else 'unset'}", flush=True)
if rank == "0":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, int(port)))
        s.listen()
        print("rank 0: squatted the root port", flush=True)
        if os.fork() == 0:  # hold it while the rank runs
            import time
            time.sleep(20)
            os._exit(0)
    except OSError as e:
        print("rank 0: root port taken already" if e.errno == errno.EADDRINUSE else f"rank 0: {e}", flush=True)
    s.close()
os.execvp(sys.argv[1], sys.argv[1:])
