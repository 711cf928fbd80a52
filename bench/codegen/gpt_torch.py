#!/usr/bin/env python3
"""PyTorch eager twin of examples/models/make_gpt.py, for gpt_bench.py.

    python gpt_torch.py BLOCKS STEPS THREADS [--batch B --seq T --vocab V --dim D --heads H] [--bf16]
                        [--checkpoint]

Same layout as the het model: token + position embeddings, pre-norm blocks
with separate q/k/v projections, causal attention (scaled_dot_product_attention),
output projection and residual, layer norm, 4x MLP with tanh GELU and
residual; final layer norm, a bias-free head, mean cross-entropy over every
position. Adam (lr 0.001, PyTorch's defaults otherwise, as het's). The first
step is a warm-up, as on het's side. Prints samples/s and ms per step.
--checkpoint wraps each block in torch.utils.checkpoint (non-reentrant):
PyTorch's full activation recomputation, the peer of het's --recompute full.
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln1(x)
        split = lambda y: y.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        a = F.scaled_dot_product_attention(split(self.q(h)), split(self.k(h)), split(self.v(h)),
                                           is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, seq, dim, heads, blocks, checkpoint=False):
        super().__init__()
        self.checkpoint = checkpoint
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(blocks)])
        self.lnf = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens, targets):
        positions = torch.arange(tokens.shape[1])
        x = self.wte(tokens) + self.wpe(positions)
        for block in self.blocks:
            x = (torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
                 if self.checkpoint else block(x))
        logits = self.head(self.lnf(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("blocks", type=int)
    p.add_argument("steps", type=int)
    p.add_argument("threads", type=int)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--bf16", action="store_true", help="under torch.autocast(cpu, bfloat16)")
    p.add_argument("--checkpoint", action="store_true",
                   help="torch.utils.checkpoint around each block (full recomputation)")
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    model = GPT(a.vocab, a.seq, a.dim, a.heads, a.blocks, a.checkpoint)
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq))
    targets = torch.randint(0, a.vocab, (a.batch, a.seq))

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            loss = model(tokens, targets)
        loss.backward()
        opt.step()

    step()
    start = time.perf_counter()
    for _ in range(a.steps - 1):
        step()
    seconds = time.perf_counter() - start
    print(f"samples/s {(a.steps - 1) * a.batch / seconds:.2f} ms {1000 * seconds / (a.steps - 1):.1f} "
          f"torch {torch.__version__}")


if __name__ == "__main__":
    main()
