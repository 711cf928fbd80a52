#!/usr/bin/env python3
"""The flagship run: a transformers GPT-2 trained by het across both local
device kinds on real text, beside PyTorch training the same module.

    .venv/bin/python examples/llm/flagship.py --corpus DIR --out DIR [--model tiny]
        [--batch 8] [--window 32] [--steps 300] [--cluster local-two-kinds.json]

What it does, in order (docs/llm.md):

1. export examples/llm/gpt2.py:MODEL (random weights, tied embeddings) with
   het.export;
2. compile it with `--plan auto` for the cluster: AdamW (weight decay 0.1,
   betas 0.9,0.95), gradient clipping at 1.0;
3. train it with het-run on the corpus's train.bin: warm-up + cosine
   schedule, validation on val.bin every --eval-every steps, asynchronous
   checkpoints, every window logged;
4. train the same module in PyTorch eager (bench/llm/torch_train.py) on the
   windows het logged, with the same initial parameters, update and
   schedule;
5. write loss.png (both training and validation curves) and summary.json
   (the job's tokens/s and model FLOPs utilization against het-dot-peak's
   f32 FMA peak; per rank: device kind, tokens/s through it, peak memory,
   checkpoint stalls; the final losses of both and their difference);
6. decode --generate tokens after a prompt from the trained parameters
   (python -m het.generate), checked token for token against transformers'
   greedy decoding of the same parameters.

Exits non-zero when a step fails, a loss of the first 20 steps parts from
PyTorch's by more than --tolerance, or generation differs from
transformers.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "build", "bin")
PY = sys.executable
sys.path.insert(0, os.path.join(ROOT, "python"))


def run(cmd, log):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), HET_TOOLS_DIR=BIN)
    with open(log, "w") as f:
        done = subprocess.run(cmd, text=True, stdout=f, stderr=subprocess.STDOUT, env=env)
    text = open(log).read()
    if done.returncode != 0:
        sys.exit(f"{text}\nflagship: {' '.join(cmd[:2])} failed (log: {log})")
    return text


def rank_report(text, global_batch, window):
    """Each rank's kind, share, tokens/s, memory and checkpoint stalls from
    het-run's output."""
    ranks = {}
    for r, begin, end, tp, kind, first, last, micro in re.findall(
            r"^\[rank (\d+)\] rank \d+: stage \S+ \(layers \[(\d+), (\d+)\)\) replica \S+(?: device \d+/(\d+))? "
            r"on \S+ \(([^,]+), [^)]*\), samples \[(\d+), (\d+)\) of each micro-batch of (\d+)", text, re.M):
        ranks[int(r)] = {"rank": int(r), "kind": kind, "layers": [int(begin), int(end)],
                         "tensor_parallel": int(tp or 1),
                         "samples_per_step": (int(last) - int(first)) * (global_batch // int(micro))}
    for r, ms in re.findall(r"^\[rank (\d+)\] time per step ([0-9.]+) ms", text, re.M):
        row = ranks.setdefault(int(r), {"rank": int(r)})
        samples = row.get("samples_per_step", 0)
        row["step_ms"] = float(ms)
        row["tokens_per_second"] = samples * window / (float(ms) / 1e3)
    for r, peak in re.findall(r"^\[rank (\d+)\] rank \d+: memory: .*?peak resident ([0-9.]+) MiB", text, re.M):
        ranks.setdefault(int(r), {"rank": int(r)})["peak_resident_mib"] = float(peak)
    for r, mean, worst in re.findall(
            r"^\[rank (\d+)\] checkpoint stall \(\w+\): mean ([0-9.]+) ms, max ([0-9.]+) ms", text, re.M):
        ranks[int(r)]["checkpoint_stall_ms"] = {"mean": float(mean), "max": float(worst)}
    return [ranks[r] for r in sorted(ranks)]


def layer_flops(show_model):
    """Forward + backward FLOPs per sample of each layer, from het-plan
    --show-model's table."""
    flops = {}
    for layer, forward, backward in re.findall(r"^\s+(\d+)\s+\S+\s+(\S+)\s+(\S+)\s", show_model, re.M):
        flops[int(layer)] = float(forward) + float(backward)
    return [flops[i] for i in range(len(flops))]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="het.data prepare's output folder")
    p.add_argument("--out", required=True)
    p.add_argument("--model", default="tiny", help="a factory of examples/llm/gpt2.py")
    p.add_argument("--batch", type=int, default=8, help="the global batch (samples per step)")
    p.add_argument("--window", type=int, default=32)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup-steps", type=int, default=20)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-windows", type=int, default=64)
    p.add_argument("--checkpoint-every", type=int, default=100)
    p.add_argument("--cluster", default=os.path.join(ROOT, "examples", "clusters", "local-two-kinds.json"))
    p.add_argument("--generate", type=int, default=20)
    p.add_argument("--prompt", default="def __init__(self")
    p.add_argument("--tolerance", type=float, default=1e-4,
                   help="the largest relative difference of a loss of the first 20 steps from PyTorch's "
                        "(later steps drift apart as rounding compounds: reported, not bounded)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    out = lambda name: os.path.join(a.out, name)  # noqa: E731
    spec = os.path.join(ROOT, "examples", "llm", "gpt2.py") + ":" + a.model
    train, val = os.path.join(a.corpus, "train.bin"), os.path.join(a.corpus, "val.bin")
    vocab = json.load(open(train + ".json"))["vocab_size"]

    run([PY, "-m", "het.export", spec, "--input-shape", f"{a.batch},{a.window}", "--input-dtype", "int64",
         "-o", out("lm.mlir")], out("export.txt"))
    update = ["--optimizer", "adamw", "--weight-decay", "0.1", "--betas", "0.9,0.95", "--clip-grad-norm", "1.0"]
    plan = run([os.path.join(BIN, "het-compile"), out("lm.mlir"), "--lr", str(a.lr), *update,
                "--cluster", a.cluster, "--global-batch", str(a.batch), "-o", out("lm")], out("compile.txt"))
    for line in plan.splitlines():
        if line.startswith(("stage ", "predicted")):
            print(f"flagship: {line}")
    schedule = ["--lr-schedule", "cosine", "--warmup-steps", str(a.warmup_steps), "--min-lr", str(a.lr / 10)]
    samples = out("samples.log")
    if os.path.exists(samples):
        os.remove(samples)
    text = run([os.path.join(BIN, "het-run"), "--cluster", a.cluster, "--timeout-ms", "120000", out("lm"),
                "--steps", str(a.steps), "--print-every", "1", "--load", out("lm.npz"), "--data", train,
                "--eval", val, "--eval-every", str(a.eval_every), "--eval-windows", str(a.eval_windows),
                "--checkpoint-dir", out("checkpoints"), "--checkpoint-every", str(a.checkpoint_every),
                "--log-samples", samples, "--save", out("trained.npz"), *schedule], out("train.txt"))
    losses = [float(v) for v in re.findall(r"^\[rank \d+\] step \d+ loss (\S+)", text, re.M)]
    evals = [{"step": int(s), "loss": float(v)}
             for s, v in re.findall(r"^\[rank \d+\] eval after step (\d+): loss (\S+)", text, re.M)]
    run([PY, os.path.join(ROOT, "bench", "llm", "torch_train.py"), spec, "--tokens", train, "--samples", samples,
         "--batch", str(a.batch), "--window", str(a.window), "--steps", str(a.steps), "--lr", str(a.lr),
         "--optimizer", "adamw", "--weight-decay", "0.1", "--betas", "0.9,0.95", "--clip-grad-norm", "1.0",
         *schedule, "--val", val, "--eval-every", str(a.eval_every), "--eval-windows", str(a.eval_windows),
         "--json", out("torch.json")], out("torch.txt"))
    torch = json.load(open(out("torch.json")))
    if len(losses) != a.steps:
        sys.exit(f"flagship: het printed {len(losses)} losses for {a.steps} steps ({out('train.txt')})")
    differences = [abs(h - t) / t for h, t in zip(losses, torch["losses"])]
    worst, first20 = max(differences), max(differences[:20])
    from het import plot

    plot.curves({"het train": (list(range(a.steps)), losses),
                 "PyTorch train": (list(range(a.steps)), torch["losses"]),
                 "het validation": ([e["step"] for e in evals], [e["loss"] for e in evals]),
                 "PyTorch validation": ([e["step"] for e in torch["eval"]], [e["loss"] for e in torch["eval"]])},
                out("loss.png"), title=f"GPT-2 {a.model} on {os.path.basename(a.cluster)}: het and PyTorch",
                dashed=("PyTorch train", "PyTorch validation"))

    peak = float(re.search(r"f32 FMA peak.*?: ([0-9.]+) GFLOP/s",
                           run([os.path.join(BIN, "het-dot-peak")], out("peak.txt"))).group(1)) * 1e9
    n = torch["parameters"]
    flops_per_token = 6 * n  # the attention scores' FLOPs are small at these windows
    summary = {
        "model": spec, "parameters": n, "vocabulary": vocab, "global_batch": a.batch, "window": a.window,
        "steps": a.steps, "update": "AdamW (weight decay 0.1, betas 0.9,0.95), clip 1.0, " + " ".join(schedule),
        "ranks": rank_report(text, a.batch, a.window),
        "het_final_loss": losses[-1], "torch_final_loss": torch["losses"][-1],
        "max_relative_difference": worst, "max_relative_difference_first_20_steps": first20,
        "het_eval": evals, "torch_eval": torch["eval"],
        "flops_per_token": flops_per_token, "f32_peak_flops_per_thread": peak,
        "loss_png": os.path.abspath(out("loss.png")),
    }
    # The job's model FLOPs utilization: its tokens/s at the median
    # iteration time against the f32 peak of one thread per rank (het-run's
    # default, 6 N FLOPs per token). Per rank and kind: the FLOPs of the
    # rank's layers (het-plan --show-model: forward and backward per sample,
    # from the IR, attention included) for the samples it takes per step,
    # over its tensor-parallel devices, at the same iteration time.
    iteration = re.search(r"iteration time ([0-9.]+) ms", text)
    if iteration:
        seconds = float(iteration.group(1)) / 1e3
        summary["tokens_per_second"] = a.batch * a.window / seconds
        summary["mfu"] = summary["tokens_per_second"] * flops_per_token / (peak * len(summary["ranks"]))
        layers = layer_flops(run([os.path.join(BIN, "het-plan"), "--cluster", a.cluster, "--model",
                                  out("lm.mlir"), "--show-model"], out("model.txt")))
        kinds = {}
        for r in summary["ranks"]:
            if "layers" not in r:
                continue
            flops = sum(layers[r["layers"][0]:r["layers"][1]]) * r["samples_per_step"] / r["tensor_parallel"]
            r["model_flops_per_second"] = flops / seconds
            r["mfu"] = r["model_flops_per_second"] / peak
            k = kinds.setdefault(r["kind"], {"ranks": 0, "model_flops_per_second": 0.0})
            k["ranks"] += 1
            k["model_flops_per_second"] += r["model_flops_per_second"]
        for k in kinds.values():
            k["mfu"] = k["model_flops_per_second"] / (peak * k["ranks"])
        summary["kinds"] = kinds
    json.dump(summary, open(out("summary.json"), "w"), indent=1)
    print(f"flagship: {a.steps} steps on {len(summary['ranks'])} ranks, loss {losses[0]:.3f} -> {losses[-1]:.3f}; "
          f"PyTorch {torch['losses'][-1]:.3f} (relative difference at most {first20:.1e} over the first 20 "
          f"steps, {worst:.1e} over all)")
    for e, t in zip(evals, torch["eval"]):
        print(f"flagship: validation after step {e['step']}: het {e['loss']:.4f}, PyTorch {t['loss']:.4f}")
    if "mfu" in summary:
        print(f"flagship: {summary['tokens_per_second']:.0f} tokens/s, model FLOPs utilization "
              f"{100 * summary['mfu']:.1f}% of {len(summary['ranks'])} threads' f32 peak")
        for name, k in summary.get("kinds", {}).items():
            print(f"flagship: {name}: {k['ranks']} rank{'s' if k['ranks'] != 1 else ''}, "
                  f"{k['model_flops_per_second'] / 1e9:.1f} GFLOP/s of the model's, "
                  f"{100 * k['mfu']:.1f}% of {k['ranks']} thread{'s' if k['ranks'] != 1 else ''}' f32 peak")
    for r in summary["ranks"]:
        stall = r.get("checkpoint_stall_ms")
        print(f"flagship: rank {r['rank']} ({r.get('kind', '?')}): {r.get('tokens_per_second', 0):.0f} tokens/s "
              f"through it, peak {r.get('peak_resident_mib', 0):.0f} MiB"
              + (f", checkpoint stall max {stall['max']:.2f} ms" if stall else ""))
    print(f"flagship: loss curves in {summary['loss_png']}, summary in {os.path.abspath(out('summary.json'))}")
    if first20 > a.tolerance:
        sys.exit(f"flagship: het's first 20 losses part from PyTorch's by {first20:.2e} (> {a.tolerance})")

    # Text from the trained parameters, decoded by a one-rank build of the model.
    run([os.path.join(BIN, "het-compile"), out("lm.mlir"), "--lr", str(a.lr), *update, "-o", out("lm-one")],
        out("compile-one.txt"))
    generated = run([PY, "-m", "het.generate", out("lm-one"), "--model", out("lm.npz"), "--params", out("trained.npz"),
                     "--tokenizer", os.path.join(a.corpus, "tokenizer.json"), "--prompt", a.prompt,
                     "--tokens", str(a.generate), "--check-transformers", spec], out("generate.txt"))
    for line in generated.splitlines():
        if line.startswith(("text:", "transformers")):
            print(f"flagship: {line}")


if __name__ == "__main__":
    main()
