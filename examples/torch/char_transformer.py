"""A character-level transformer language model in the usual PyTorch style
(nn.Embedding, pre-norm blocks with scaled dot-product attention written
out, nn.GELU MLP, weight-tied head). Not used by the tests:

    python -m het.export examples/torch/char_transformer.py:tiny \\
        --input-shape 8,32 --input-dtype int64 --loss cross_entropy \\
        -o /tmp/char.mlir --train-steps 20 --lr 0.05 --check
"""

import math

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim, heads, context):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.out_proj = nn.Linear(dim, dim)
        mask = torch.tril(torch.ones(context, context, dtype=torch.bool))
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q = self.q_proj(x).reshape(b, t, h, d // h).permute(0, 2, 1, 3)
        k = self.k_proj(x).reshape(b, t, h, d // h).permute(0, 2, 1, 3)
        v = self.v_proj(x).reshape(b, t, h, d // h).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // h)
        scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
        out = torch.matmul(scores.softmax(dim=-1), v)
        return self.out_proj(out.permute(0, 2, 1, 3).reshape(b, t, d))


class Layer(nn.Module):
    def __init__(self, dim, heads, context):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, context)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        x = x + self.ff(self.norm2(x))
        return x


class CharTransformer(nn.Module):
    def __init__(self, vocab=96, dim=48, heads=4, depth=2, context=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.pos = nn.Parameter(torch.zeros(context, dim))
        nn.init.normal_(self.pos, std=0.02)
        self.layers = nn.Sequential(*[Layer(dim, heads, context) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight  # weight tying

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.embed(tokens) + self.pos[:t]
        x = self.layers(x)
        return self.head(self.norm(x))


def tiny():
    return CharTransformer()
