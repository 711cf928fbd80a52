#!/usr/bin/env python3
"""The language-model benchmark: a transformers GPT-2 trained by het and by
PyTorch eager on the same tokens, side by side in one run.

    .venv/bin/python bench/llm/run.py [--model small] [--batch 4] [--window 256]
        [--steps 300] [--threads 1,2] [--timing-steps 6] [--rounds 2] [--out bench-llm]

1. Data: `het.data prepare` on the Python standard library's sources
   (--limit-bytes of them), a byte-level BPE of the model's vocabulary.
2. Model: examples/llm/gpt2.py:MODEL (`small`: GPT-2 small's shape at the
   corpus's vocabulary), exported with het.export and compiled by het-compile
   with AdamW (weight decay 0.1, betas 0.9,0.95), gradient clipping at 1.0.
3. Throughput: at each --threads count, --rounds rounds alternating het's
   executable and bench/llm/torch_train.py (the same module, the same initial
   parameters, the windows het logged), --timing-steps steps each; tokens/s
   over the steps after the first, peak resident memory of each process.
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


def het_result(out, batch, window):
    losses = [float(v) for v in re.findall(r"^step \d+ loss (\S+)", out, re.M)]
    evals = [{"step": int(s), "loss": float(v)}
             for s, v in re.findall(r"^eval after step (\d+): loss (\S+)", out, re.M)]
    # The executable's span: the steps after the first (its printed rate has
    # one decimal, too coarse for a big model's fraction of a sample per second).
    steps, seconds = re.search(r"\((\d+) steps of batch \d+ in ([0-9.]+) s after the first", out).groups()
    samples = int(steps) * batch / float(seconds)
    peak = float(re.search(r"peak resident ([0-9.]+) MiB", out).group(1))
    return {"losses": losses, "eval": evals, "tokens_per_second": samples * window,
            "peak_resident_mib": peak}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="small", help="a factory of examples/llm/gpt2.py")
    p.add_argument("--vocab", type=int, default=8192, help="the corpus's vocabulary (the factory's default)")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--window", type=int, default=256)
    p.add_argument("--steps", type=int, default=300, help="steps of the loss curves")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--timing-steps", type=int, default=6)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--warmup-steps", type=int, default=30)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--eval-windows", type=int, default=64)
    p.add_argument("--limit-bytes", type=int, default=16 << 20)
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
    run([os.path.join(BIN, "het-compile"), out("lm.mlir"), "--lr", str(a.lr), *update, "-o", out("lm")])
    torch_update = ["--optimizer", "adamw", "--weight-decay", "0.1", "--betas", "0.9,0.95", "--clip-grad-norm", "1.0"]
    data = ["--load", out("lm.npz"), "--data", out("corpus/train.bin")]

    def het(steps, t, extra=(), tag="timing"):
        samples = out(f"het-{tag}-{t}.samples")
        if os.path.exists(samples):
            os.remove(samples)
        text = run([out("lm"), "--steps", str(steps), "--threads", str(t), "--print-every", "1", *data,
                    "--log-samples", samples, *extra])
        return het_result(text, a.batch, a.window), samples

    def torch(steps, t, samples, extra=(), tag="timing"):
        js = out(f"torch-{tag}-{t}.json")
        run([PY, os.path.join(ROOT, "bench", "llm", "torch_train.py"), spec, "--tokens", out("corpus/train.bin"),
             "--samples", samples, "--batch", str(a.batch), "--window", str(a.window), "--steps", str(steps),
             "--lr", str(a.lr), *torch_update, "--threads", str(t), "--json", js, *extra])
        return json.load(open(js))

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
        "model": f"examples/llm/gpt2.py:{a.model}", "parameters": n, "batch": a.batch, "window": a.window,
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
