#!/usr/bin/env python3
"""het-compiled training vs PyTorch eager on the CPU, in one run.

    .venv/bin/python bench/codegen/bench.py [--threads T] [--steps N]

Models (same shapes, batch, optimizer and thread count on both sides):
  MLP  784-1024-1024-10, ReLU, batch 256, SGD            (bench/codegen/mlp_784.mlir)
  CNN  3 x conv3x3-BN-ReLU (16/32/32 ch, 2x2 max pool after the 2nd), global
       average pool, linear; 32x32x3 inputs, batch 64, SGD (bench/codegen/cnn_b64.mlir)
Prints samples/s for het and PyTorch and their ratio, the peak resident
memory of both processes, the CNN step time with
BN+ReLU fused and unfused (het-compile --fuse=false), compile times, and
samples/s of both models with each kernel library (--library=dnnl, mlir,
reference: the cpu.onednn and cpu.mlir device kinds, and het's loops) and
with the generated kernels tuned (het-tune kernels --library mlir, its time
and choices printed), on one thread.
Throughput excludes the first (warm-up) step on both sides. Not a test:
numbers depend on the machine and its load; ratios come from the same run.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# The benchmark GPT's shape (examples/models/make_gpt.py; its PyTorch twin
# is gpt_torch.py): gpt_bench.py, bench/precision and bench/memory use it.
GPT_SIZES = ["--batch", "8", "--seq", "128", "--vocab", "4096", "--dim", "256", "--heads", "4"]


def make_gpt(blocks, directory):
    """Writes the benchmark GPT with `blocks` blocks into `directory`; returns its path."""
    path = os.path.join(directory, f"gpt{blocks}.mlir")
    with open(path, "w") as f:
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "models", "make_gpt.py"),
                        *GPT_SIZES, "--blocks", str(blocks)], stdout=f, check=True)
    return path


def compile_model(compiler, model, out, extra=()):
    start = time.perf_counter()
    subprocess.run([compiler, model, "-o", out, *extra], check=True)
    return time.perf_counter() - start


def run_measured(cmd, with_stderr=False):
    """Runs cmd; returns (returncode, stdout (and stderr with with_stderr),
    peak resident set in MiB), the peak from the kernel's accounting of that
    one child (wait4)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if with_stderr else subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, out, usage.ru_maxrss / 1024.0


def run_het(exe, steps, threads, with_memory=False):
    rc, out, peak = run_measured([exe, "--steps", str(steps), "--threads", str(threads),
                                  "--print-every", str(steps)])
    if rc != 0:
        sys.exit(f"bench: {exe} failed (exit {rc})")
    m = re.search(r"throughput (\S+) samples/s \((\d+) steps of batch (\d+) in (\S+) s", out)
    samples, timed_steps, batch, seconds = float(m.group(1)), int(m.group(2)), int(m.group(3)), float(m.group(4))
    if with_memory:
        return samples, 1000.0 * seconds / timed_steps, peak
    return samples, 1000.0 * seconds / timed_steps


def run_torch(python, name, steps, threads):
    """samples/s, ms/step, torch version and peak RSS (MiB) of PyTorch eager,
    or None when torch is absent."""
    rc, out, peak = run_measured([python, os.path.join(HERE, "torch_train.py"), name, str(steps), str(threads)])
    m = re.search(r"samples/s (\S+) ms (\S+) torch (\S+)", out)
    if rc != 0 or not m:
        return None
    return float(m.group(1)), float(m.group(2)), m.group(3), peak


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # Default one thread: on a shared, loaded machine the OpenMP barriers of
    # both oneDNN and PyTorch slow down tenfold when a thread is descheduled.
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--library-steps", type=int, default=10,
                   help="steps of the kernel-library comparison (the reference CNN is slow)")
    p.add_argument("--library-rounds", type=int, default=3,
                   help="alternating rounds of the kernel-library comparison")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--torch-python", default=sys.executable,
                   help="interpreter that has torch (default: this one)")
    a = p.parse_args()
    compiler = os.path.join(a.build, "bin", "het-compile")
    if not os.path.exists(compiler):
        sys.exit(f"bench: {compiler} not found; build het first (scripts/build.sh)")
    print(f"het-compile vs PyTorch eager, CPU, {a.threads} threads, {a.steps} steps "
          f"(first step excluded)")
    work = tempfile.mkdtemp(prefix="het-bench-")
    models = {"MLP": (os.path.join(HERE, "mlp_784.mlir"), ["--lr", "0.1"]),
              "CNN": (os.path.join(HERE, "cnn_b64.mlir"), ["--lr", "0.05"])}
    torch_version = None
    rows = []
    step_ms = {}
    for name, (model, opts) in models.items():
        exe = os.path.join(work, name.lower())
        seconds = compile_model(compiler, model, exe, opts)
        het, het_ms, het_mib = run_het(exe, a.steps, a.threads, with_memory=True)
        step_ms[name] = het_ms
        ref = ref_mib = None
        result = run_torch(a.torch_python, name, a.steps, a.threads)
        if result:
            ref, _, torch_version, ref_mib = result
        rows.append((name, seconds, het, ref, het_mib, ref_mib))

    print()
    if torch_version:
        print(f"PyTorch {torch_version} ({a.torch_python})")
    else:
        print(f"PyTorch: not available to {a.torch_python} -- het's figures only "
              "(--torch-python names an interpreter with torch)")
    # Peak RSS: the whole process (PyTorch's includes the interpreter and
    # libtorch, about 300 MiB before any tensor; het's the executable and
    # its libraries).
    print(f"{'model':6} {'compile s':>10} {'het samples/s':>14} {'torch samples/s':>16} {'het/torch':>10} "
          f"{'het peak MiB':>13} {'torch peak MiB':>15}")
    for name, seconds, het, ref, het_mib, ref_mib in rows:
        ratio = f"{het / ref:9.2f}x" if ref else "      n/a"
        ref_text = f"{ref:16.1f}" if ref else f"{'n/a':>16}"
        ref_mib_text = f"{ref_mib:15.0f}" if ref_mib else f"{'n/a':>15}"
        print(f"{name:6} {seconds:10.2f} {het:14.1f} {ref_text} {ratio} {het_mib:13.0f} {ref_mib_text}")

    # BN+ReLU fused (default) vs unfused.
    unfused = os.path.join(work, "cnn_unfused")
    compile_model(compiler, models["CNN"][0], unfused, models["CNN"][1] + ["--fuse=false"])
    _, unfused_ms = run_het(unfused, a.steps, a.threads)
    print()
    print(f"CNN step, BN+ReLU fused:   {step_ms['CNN']:8.2f} ms")
    print(f"CNN step, BN+ReLU unfused: {unfused_ms:8.2f} ms  (fused is "
          f"{unfused_ms / step_ms['CNN']:.2f}x as fast)")

    # Kernel libraries, one thread each: generated linalg loops (mlir) are
    # different code from oneDNN's primitives, with a different speed; the
    # tuned mlir build takes each contraction's register tiling from
    # het-tune kernels --library mlir (timed here, choices printed). The
    # builds alternate over --library-rounds rounds; each figure is the
    # median round (the machine's load moves every build alike).
    tuner = os.path.join(a.build, "bin", "het-tune")
    database = os.path.join(work, "tune.db")
    print()
    print("tuning the generated contractions (het-tune kernels --library mlir, one thread):")
    tuning_seconds = {}
    for name, (model, opts) in models.items():
        start = time.perf_counter()
        out = subprocess.run([tuner, "kernels", model, "--library", "mlir", "--db", database],
                             check=True, capture_output=True, text=True).stdout
        tuning_seconds[name] = time.perf_counter() - start
        print(f"{name}: {tuning_seconds[name]:.1f} s")
        for line in out.splitlines():
            if line.startswith("contraction") or "best" in line:
                print("  " + line.strip())
    print(f"both models: {sum(tuning_seconds.values()):.1f} s")
    print()
    print(f"kernel libraries, 1 thread, {a.library_steps} steps, median of "
          f"{a.library_rounds} alternating rounds: samples/s")
    print(f"{'model':6} {'dnnl':>10} {'mlir':>10} {'mlir tuned':>11} {'reference':>10} "
          f"{'tuned/mlir':>11} {'tuned/dnnl':>11}")
    builds = (("dnnl", ["--library=dnnl"]), ("mlir", ["--library=mlir"]),
              ("tuned", ["--library=mlir", "--tuning-db", database]),
              ("reference", ["--library=reference"]))
    for name, (model, opts) in models.items():
        exes = {}
        for label, flags in builds:
            exes[label] = os.path.join(work, f"{name.lower()}_{label}")
            compile_model(compiler, model, exes[label], opts + flags)
        speeds = {label: [] for label, _ in builds}
        for _ in range(a.library_rounds):
            for label, _ in builds:
                speeds[label].append(run_het(exes[label], a.library_steps, 1)[0])
        median = {label: sorted(v)[len(v) // 2] for label, v in speeds.items()}
        print(f"{name:6} {median['dnnl']:10.1f} {median['mlir']:10.1f} {median['tuned']:11.1f} "
              f"{median['reference']:10.1f} {median['tuned'] / median['mlir']:10.2f}x "
              f"{median['tuned'] / median['dnnl']:10.2f}x")

if __name__ == "__main__":
    main()
