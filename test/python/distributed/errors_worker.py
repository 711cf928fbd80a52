"""Error cases of the hetccl backend; each rank prints what it saw as
"RESULT <key>=<value>" lines for test_c10d.py to judge.

    errors_worker.py shape|local|timeout|killed|abort|options
"""

import datetime
import faulthandler
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import het.distributed as hd

faulthandler.dump_traceback_later(30, exit=True)  # a hang shows where it is
mode = sys.argv[1]
rank = int(os.environ["RANK"])


def result(key, value):
    print(f"RESULT {key}={value}", flush=True)


def expect_error(key, fn):
    start = time.monotonic()
    try:
        fn()
        result(key, "no error")
    except Exception as e:  # noqa: BLE001  (the type is what we report)
        result(key, type(e).__name__)
        result(key + "_seconds", f"{time.monotonic() - start:.2f}")
        print(f"{key}: {e}".splitlines()[0], flush=True)


if mode == "shape":
    dist.init_process_group("hetccl", timeout=datetime.timedelta(seconds=20))
    t = torch.ones(10 if rank == 0 else 12)
    expect_error("mismatch", lambda: dist.all_reduce(t))
    # Split sizes the two ranks disagree on: rank 1 sends rank 0 two rows
    # that rank 0 does not expect, and expects two that rank 0 does not
    # send. all_to_all_single (hetcclAllToAllV) fails both at once, not
    # after the timeout. On a new group (its own communicator and store
    # keys): a second init_process_group in the same processes could read
    # the first group's addresses from a store not yet torn down.
    group = dist.new_group([0, 1])
    out = torch.empty(1 if rank == 0 else 3)
    inp = torch.ones(1 if rank == 0 else 3)
    splits_out = [1, 0] if rank == 0 else [2, 1]  # rows from rank 0, from rank 1
    splits_in = [1, 0] if rank == 0 else [2, 1]   # rows to rank 0, to rank 1
    expect_error("split_mismatch",
                 lambda: dist.all_to_all_single(out, inp, splits_out, splits_in, group=group))

elif mode == "local":
    dist.init_process_group("hetccl")
    expect_error("bool_sum", lambda: dist.all_reduce(torch.ones(4, dtype=torch.bool)))
    expect_error("band", lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BAND))
    expect_error("complex_product",
                 lambda: dist.all_reduce(torch.ones(4, dtype=torch.complex64), op=dist.ReduceOp.PRODUCT))
    expect_error("gather_size", lambda: dist.all_gather_into_tensor(torch.empty(5), torch.ones(2)))
    expect_error("uneven_split", lambda: dist.all_to_all_single(torch.empty(3), torch.ones(3), [1, 1], [1, 2]))
    expect_error("recv_any", lambda: dist.recv(torch.empty(2)))
    expect_error("send_self", lambda: dist.send(torch.empty(2), rank))
    # None of that reached the wire: the group still works.
    t = torch.full((3,), float(rank + 1))
    dist.all_reduce(t)
    result("after", t[0].item())

elif mode == "timeout":
    dist.init_process_group("hetccl", pg_options=hd.Options(timeout=datetime.timedelta(seconds=2)))
    if rank == 0:
        expect_error("late_peer", lambda: dist.all_reduce(torch.ones(4)))
    else:
        time.sleep(5)

elif mode == "killed":
    dist.init_process_group("hetccl", pg_options=hd.Options(timeout=datetime.timedelta(seconds=4)))
    for _ in range(3):
        dist.all_reduce(torch.ones(1000))
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.2)
    expect_error("dead_peer", lambda: [dist.all_reduce(torch.ones(1000)) for _ in range(100)])

elif mode == "abort":
    # abort() from another thread ends a call blocked on a peer that never
    # comes, and every later call on the group fails at once.
    import threading
    dist.init_process_group("hetccl", timeout=datetime.timedelta(seconds=60))
    if rank == 0:
        work = dist.all_reduce(torch.ones(4), async_op=True)
        threading.Timer(1.0, hd.backend().abort).start()
        expect_error("blocked", work.wait)
        expect_error("later", lambda: dist.all_reduce(torch.ones(4)))
    else:
        time.sleep(3)
        expect_error("peer", lambda: dist.all_reduce(torch.ones(4)))

elif mode == "options":
    expect_error("bad_algorithm", lambda: hd.Options(algorithm="fastest"))
    dist.init_process_group("hetccl", pg_options=hd.Options(algorithm="tree", compression="fp16"))
    expect_error("bad_pg_options", lambda: dist.new_group(backend="hetccl", pg_options=object()))
    result("algorithm", hd.backend().algorithm)
    t = torch.full((1000,), 0.1 * (rank + 1))
    dist.all_reduce(t)  # fp16 compression: close, not exact
    result("fp16_error", f"{abs(t[0].item() - 0.3):.1e}")

dist.destroy_process_group() if dist.is_initialized() else None
result("exit", "clean")
