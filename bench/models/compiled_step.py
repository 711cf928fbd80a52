"""The het side of the model benches (llama_step.py, moe_step.py): save an
imported program with its batch, compile the training step with
het-compile, train it with the executable on the given threads."""
import os
import subprocess
import tempfile
import time


def compile_and_train(prog, feed, steps, threads, lr, name):
    """(the executable's stdout, het-compile's seconds). `feed` holds the
    program's initial values and the batch (arrays by het.name)."""
    import numpy as np

    from het import tools

    with tempfile.TemporaryDirectory(prefix=f"het-bench-{name}-") as tmp:
        mlir = os.path.join(tmp, f"{name}.mlir")
        prog.save(mlir)
        np.savez(os.path.join(tmp, "in.npz"), **feed)
        exe = os.path.join(tmp, name)
        start = time.perf_counter()
        tools.run_tool("het-compile", [mlir, "-o", exe, "--lr", str(lr)], timeout=1800)
        compile_s = time.perf_counter() - start
        out = subprocess.run([exe, "--steps", str(steps), "--threads", str(threads),
                              "--load", os.path.join(tmp, "in.npz")],
                             check=True, capture_output=True, text=True).stdout
    return out, compile_s
