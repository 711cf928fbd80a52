#!/usr/bin/env python3
"""A het-compiled training step of a Mixtral-style mixture of experts vs
PyTorch eager (Hugging Face's own sparse block), in one run.

    HET_TOOLS_DIR=build/bin PYTHONPATH=python .venv/bin/python bench/models/moe_step.py \\
        [--hidden 128] [--experts 8] [--top-k 2] [--layers 2] [--batch 8] [--seq 64] \\
        [--steps 20] [--threads 1] [--capacity-factor F]

The model is transformers' MixtralForCausalLM with random weights
(vocabulary 512, intermediate size 2 x hidden, 4 heads) trained on
cross-entropy plus 0.02 x the load-balancing loss (hf_tiny.py's
LossWithRouterAux). PyTorch runs the model as transformers wrote it (the
dropless block: a loop over the experts that got tokens, `index_add_`);
het imports it onto its fixed-shape ops (het.moe_router/dispatch/combine,
the experts as batched matmuls) and het-compile builds the step. Both
train the same weights on the same batch with SGD (lr 0.1) on the same
number of threads. Prints samples/s of both and their ratio (first step
excluded on both sides), how far the loss traces agree, the dropped
choices with a capacity factor, and the machine. Not a test.
"""
import argparse
import datetime
import os
import platform
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "torch"))
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--capacity-factor", type=float, default=None)
    args = ap.parse_args()

    import numpy as np
    import torch
    from transformers import MixtralConfig, MixtralForCausalLM

    import hf_tiny
    from compiled_step import compile_and_train
    from het import from_torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    vocab = 512
    config = MixtralConfig(vocab_size=vocab, hidden_size=args.hidden, intermediate_size=2 * args.hidden,
                           num_hidden_layers=args.layers, num_attention_heads=4, num_key_value_heads=4,
                           max_position_embeddings=max(64, args.seq), num_local_experts=args.experts,
                           num_experts_per_tok=args.top_k, router_aux_loss_coef=0.02)
    model = hf_tiny.LossWithRouterAux(MixtralForCausalLM(config))
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (args.batch, args.seq), generator=gen)
    labels = torch.randint(0, vocab, (args.batch, args.seq), generator=gen)
    initial = {k: v.clone() for k, v in model.state_dict().items()}

    prog = from_torch(model, (ids, labels), loss="none", input_names=["input", "labels"],
                      moe_capacity_factor=args.capacity_factor)
    feed = {k: np.asarray(v) for k, v in prog.initial_values().items()}
    feed["input"], feed["labels"] = ids.numpy(), labels.numpy()
    out, compile_s = compile_and_train(prog, feed, args.steps, args.threads, args.lr, "moe")
    het_sps = float(re.search(r"throughput (\S+) samples/s", out).group(1))
    het_losses = [float(v) for v in re.findall(r"step \d+ loss (\S+)", out)]
    dropped = re.search(r"moe: (.*)", out)

    model.load_state_dict(initial)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    times, torch_losses = [], []
    for _ in range(args.steps):
        start = time.perf_counter()
        opt.zero_grad()
        loss = model(ids, labels)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
        torch_losses.append(loss.item())
    torch_sps = args.batch * (len(times) - 1) / sum(times[1:])
    drift = max(abs(a - b) / abs(b) for a, b in zip(het_losses, torch_losses))

    print(f"Mixtral-style MoE training step: hidden {args.hidden}, {args.experts} experts top-{args.top_k}, "
          f"{args.layers} layers, batch {args.batch} x {args.seq} tokens, SGD, {args.threads} thread(s), "
          f"{args.steps} steps (first excluded)")
    print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, "
          f"{datetime.date.today().isoformat()}, torch {torch.__version__}")
    print(f"het-compile: {compile_s:.1f} s")
    print(f"het (compiled, oneDNN)   {het_sps:10.1f} samples/s")
    print(f"PyTorch eager (HF block) {torch_sps:10.1f} samples/s")
    print(f"het / PyTorch            {het_sps / torch_sps:10.2f}x")
    if args.capacity_factor is None:
        print(f"loss traces agree within {drift:.2g} (relative) over {args.steps} steps")
    else:  # PyTorch's block drops nothing: the traces differ by what het dropped
        print(f"capacity factor {args.capacity_factor}: {dropped.group(1) if dropped else '?'}; "
              f"loss traces differ by up to {drift:.2g} from PyTorch's dropless block")


if __name__ == "__main__":
    main()
