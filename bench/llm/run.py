#!/usr/bin/env python3
"""The language-model benchmark: a transformers GPT-2 trained by het and by
PyTorch eager on the same tokens, side by side in one run.

    .venv/bin/python bench/llm/run.py [--model small] [--batch 4] [--window 256]
        [--steps 300] [--threads 1,2] [--timing-steps 8] [--rounds 2] [--precision fp32|bf16]
        [--out bench-llm]

1. Data: `het.data prepare` on the Python standard library's sources
   (--limit-bytes of them), a byte-level BPE of the model's vocabulary.
2. Model: examples/llm/gpt2.py:MODEL (`small`: GPT-2 small's shape at the
   corpus's vocabulary), exported with het.export and compiled by het-compile
   with AdamW (weight decay 0.1, betas 0.9,0.95), gradient clipping at 1.0;
   --precision bf16 compiles it in bf16 and runs PyTorch under torch.autocast
   (bf16 on the CPU), the same formats on both sides.
3. Throughput: at each --threads count, --rounds rounds alternating het's
   executable and bench/llm/torch_train.py (the same module, the same initial
   parameters, the windows het logged), --timing-steps steps each; tokens/s
   at the median step time after the first two steps (both sides set up in
   their first steps: PyTorch's second step took 2-4x its steady time here),
   het's steps timed by the arrival of its line-buffered `step N loss`
   lines; peak resident memory of each process.
4. Curves: --steps steps of each at the largest thread count, with a warm-up
   + cosine schedule and validation every --eval-every steps on the first
   --eval-windows windows of the held-out tokens; `loss.png` overlays the
   four curves.
5. `summary.json`: the configuration, machine, date, each run's tokens/s,
   het / PyTorch, model FLOPs utilization (6 N + 12 L T d FLOPs per token
   against het-dot-peak's f32 FMA peak per thread), peak memory, the final
   losses and their relative difference.
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "build", "bin")
PY = sys.executable


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), HET_TOOLS_DIR=BIN)
    return subprocess.run(cmd, check=True, text=True, capture_output=True, env=env, **kw).stdout


def machine():
    model = platform.processor()
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"{model}, {os.cpu_count()} cores"


def f32_peak_per_thread():
    out = run([os.path.join(BIN, "het-dot-peak")])
    return float(re.search(r"f32 FMA peak.*?: ([0-9.]+) GFLOP/s", out).group(1)) * 1e9


WARMUP = 2  # steps left out of the timing: both sides' first steps set up (PyTorch's second is slow too)


def steady_tokens_per_second(step_seconds, batch, window):
    """Tokens/s at the median step time of the steps after WARMUP."""
    timed = sorted(step_seconds[WARMUP:] or step_seconds)
    return batch * window / timed[len(timed) // 2]


def het_result(out, step_seconds, batch, window):
    losses = [float(v) for v in re.findall(r"^step \d+ loss (\S+)", out, re.M)]
    evals = [{"step": int(s), "loss": float(v)}
             for s, v in re.findall(r"^eval after step (\d+): loss (\S+)", out, re.M)]
    peak = float(re.search(r"peak resident ([0-9.]+) MiB", out).group(1))
    return {"losses": losses, "eval": evals, "step_seconds": step_seconds,
            "tokens_per_second": steady_tokens_per_second(step_seconds, batch, window),
            "peak_resident_mib": peak}


def timed_lines(cmd):
    """Runs het's executable line-buffered (stdbuf) and times each step by
    the arrival of its `step N loss` line (a validation pass is not a step:
    the step after one is timed from the end of it)."""
    print("+ " + " ".join(cmd), flush=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), HET_TOOLS_DIR=BIN)
    proc = subprocess.Popen(["stdbuf", "-oL", *cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    lines, seconds, last = [], [], None
    start = time.perf_counter()
    for line in proc.stdout:
        now = time.perf_counter()
        lines.append(line)
        if re.match(r"^step \d+ loss", line):
            seconds.append(now - (last if last is not None else start))
            last = now
        elif line.startswith("eval after step"):
            last = now
    if proc.wait() != 0:
        sys.exit("".join(lines) + f"\n{cmd[0]} failed")
    return "".join(lines), seconds


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="small", help="a factory of examples/llm/gpt2.py")
    p.add_argument("--vocab", type=int, default=8192, help="the corpus's vocabulary (the factory's default)")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--window", type=int, default=256)
    p.add_argument("--steps", type=int, default=300, help="steps of the loss curves (0: timing only)")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--timing-steps", type=int, default=8)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--warmup-steps", type=int, default=30)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--eval-windows", type=int, default=64)
    p.add_argument("--limit-bytes", type=int, default=16 << 20)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                   help="bf16: het-compile --precision bf16 against PyTorch under torch.autocast bf16")
    p.add_argument("--out", default="bench-llm")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    out = lambda name: os.path.join(a.out, name)  # noqa: E731
    threads = [int(t) for t in a.threads.split(",")]

    # 1. Data.
    if not os.path.exists(out("corpus/train.bin")):
        print(run([PY, "-m", "het.data", "prepare", os.path.dirname(os.__file__), "--out", out("corpus"),
                   "--vocab-size", str(a.vocab), "--limit-bytes", str(a.limit_bytes)]), end="")
    # 2. Model.
    spec = os.path.join(ROOT, "examples", "llm", "gpt2.py") + ":" + a.model
    run([PY, "-m", "het.export", spec, "--input-shape", f"{a.batch},{a.window}", "--input-dtype", "int64",
         "-o", out("lm.mlir")])
    update = ["--optimizer", "adamw", "--weight-decay", "0.1", "--betas", "0.9,0.95", "--clip-grad-norm", "1.0"]
    run([os.path.join(BIN, "het-compile"), out("lm.mlir"), "--lr", str(a.lr), *update,
         "--precision", a.precision, "-o", out("lm")])
    torch_update = ["--optimizer", "adamw", "--weight-decay", "0.1", "--betas", "0.9,0.95", "--clip-grad-norm", "1.0"]
    if a.precision == "bf16":
        torch_update.append("--bf16")
    data = ["--load", out("lm.npz"), "--data", out("corpus/train.bin")]

    def het(steps, t, extra=(), tag="timing"):
        samples = out(f"het-{tag}-{t}.samples")
        if os.path.exists(samples):
            os.remove(samples)
        text, seconds = timed_lines([out("lm"), "--steps", str(steps), "--threads", str(t), "--print-every", "1",
                                     *data, "--log-samples", samples, *extra])
        return het_result(text, seconds, a.batch, a.window), samples

    def torch(steps, t, samples, extra=(), tag="timing"):
        js = out(f"torch-{tag}-{t}.json")
        run([PY, os.path.join(ROOT, "bench", "llm", "torch_train.py"), spec, "--tokens", out("corpus/train.bin"),
             "--samples", samples, "--batch", str(a.batch), "--window", str(a.window), "--steps", str(steps),
             "--lr", str(a.lr), *torch_update, "--threads", str(t), "--json", js, *extra])
        result = json.load(open(js))
        result["tokens_per_second"] = steady_tokens_per_second(result["step_seconds"], a.batch, a.window)
        return result

    # 3. Throughput, alternating.
    timing = []
    for t in threads:
        for r in range(a.rounds):
            h, samples = het(a.timing_steps, t)
            pt = torch(a.timing_steps, t, samples)
            timing.append({"threads": t, "round": r, "het_tokens_per_second": h["tokens_per_second"],
                           "torch_tokens_per_second": pt["tokens_per_second"],
                           "het_over_torch": h["tokens_per_second"] / pt["tokens_per_second"],
                           "het_peak_resident_mib": h["peak_resident_mib"],
                           "torch_peak_resident_mib": pt["peak_resident_mib"],
                           "het_first_losses": h["losses"][:3], "torch_first_losses": pt["losses"][:3]})
            print(f"threads {t} round {r}: het {h['tokens_per_second']:.1f} tokens/s, PyTorch "
                  f"{pt['tokens_per_second']:.1f} ({timing[-1]['het_over_torch']:.2f}x); peak "
                  f"{h['peak_resident_mib']:.0f} / {pt['peak_resident_mib']:.0f} MiB", flush=True)

    if a.steps == 0:
        json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "machine": machine(), "model": f"examples/llm/gpt2.py:{a.model}", "precision": a.precision,
                   "batch": a.batch,
                   "window": a.window, "timing_steps": a.timing_steps, "warmup_steps_left_out": WARMUP,
                   "timing": timing}, open(out("summary-timing.json"), "w"), indent=1)
        print(f"wrote {out('summary-timing.json')}")
        return

    # 4. Curves at the largest thread count.
    t = max(threads)
    schedule = ["--lr-schedule", "cosine", "--warmup-steps", str(a.warmup_steps), "--min-lr", str(a.lr / 10)]
    evaluation = ["--eval", out("corpus/val.bin"), "--eval-every", str(a.eval_every),
                  "--eval-windows", str(a.eval_windows)]
    h, samples = het(a.steps, t, schedule + evaluation, tag="curve")
    pt = torch(a.steps, t, samples, schedule + ["--val", out("corpus/val.bin"), "--eval-every", str(a.eval_every),
                                                 "--eval-windows", str(a.eval_windows)], tag="curve")
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from het import plot

    plot.curves({"het train": (list(range(len(h["losses"]))), h["losses"]),
                 "PyTorch train": (list(range(len(pt["losses"]))), pt["losses"]),
                 "het validation": ([e["step"] for e in h["eval"]], [e["loss"] for e in h["eval"]]),
                 "PyTorch validation": ([e["step"] for e in pt["eval"]], [e["loss"] for e in pt["eval"]])},
                out("loss.png"), title=f"GPT-2 {a.model}: het and PyTorch eager, {t} threads",
                dashed=("PyTorch train", "PyTorch validation"))

    # 5. Summary.
    n = pt["parameters"]
    layers, width = {"small": (12, 768), "tiny": (2, 64)}.get(a.model, (0, 0))
    flops_per_token = 6 * n + 12 * layers * a.window * width
    peak = f32_peak_per_thread()
    for row in timing:
        for side in ("het", "torch"):
            row[f"{side}_mfu"] = row[f"{side}_tokens_per_second"] * flops_per_token / (peak * row["threads"])
    summary = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(), "peer": pt["system"],
        "model": f"examples/llm/gpt2.py:{a.model}", "precision": a.precision, "parameters": n, "batch": a.batch,
        "window": a.window,
        "flops_per_token": flops_per_token, "f32_peak_flops_per_thread": peak,
        "update": "AdamW (weight decay 0.1, betas 0.9,0.95), clip 1.0, lr %g" % a.lr,
        "timing": timing,
        "curve": {"threads": t, "steps": a.steps, "schedule": " ".join(schedule),
                  "het_final_loss": h["losses"][-1], "torch_final_loss": pt["losses"][-1],
                  "final_relative_difference": abs(h["losses"][-1] - pt["losses"][-1]) / pt["losses"][-1],
                  "max_relative_difference": max(abs(x - y) / y for x, y in zip(h["losses"], pt["losses"])),
                  "het_eval": h["eval"], "torch_eval": pt["eval"],
                  "het_tokens_per_second": h["tokens_per_second"], "torch_tokens_per_second": pt["tokens_per_second"],
                  "het_peak_resident_mib": h["peak_resident_mib"], "torch_peak_resident_mib": pt["peak_resident_mib"]},
        "loss_png": os.path.abspath(out("loss.png")),
    }
    json.dump(summary, open(out("summary.json"), "w"), indent=1)
    c = summary["curve"]
    print(f"curves ({a.steps} steps, {t} threads): final loss het {c['het_final_loss']:.4f}, PyTorch "
          f"{c['torch_final_loss']:.4f} (relative {c['final_relative_difference']:.2e}); "
          f"het {c['het_tokens_per_second']:.1f} tokens/s, PyTorch {c['torch_tokens_per_second']:.1f}")
    print(f"wrote {out('summary.json')} and {summary['loss_png']}")


if __name__ == "__main__":
    main()
