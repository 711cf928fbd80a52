"""A LLaMA-style decoder written by hand the way users write one: RMSNorm,
rotary position embeddings (rotate-half form), grouped-query attention
(key/value heads repeated), SwiGLU feed-forward, no biases, optional
dropout, untied head. Returns logits [batch, seq, vocab]:

    python -m het.export examples/torch/llama_style.py:decoder \\
        --input-shape 4,16 --input-dtype int64 --train-steps 20 --check -o decoder.mlir

`decoder_dropout` puts dropout (p = 0.1) on the attention weights and
after the attention and feed-forward blocks.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Rotary(nn.Module):
    def __init__(self, head_dim, context, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
        angles = torch.outer(torch.arange(context).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x):  # [batch, heads, seq, head_dim]
        t = x.shape[-2]
        return x * self.cos[:t] + rotate_half(x) * self.sin[:t]


class Attention(nn.Module):
    def __init__(self, dim, heads, kv_heads, context, dropout):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, dim, bias=False)
        self.rotary = Rotary(self.head_dim, context)
        self.attn_drop = nn.Dropout(dropout)
        self.register_buffer("causal", torch.tril(torch.ones(context, context, dtype=torch.bool)),
                             persistent=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = self.rotary(q), self.rotary(k)
        groups = self.heads // self.kv_heads
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(~self.causal[:t, :t], float("-inf"))
        weights = self.attn_drop(F.softmax(scores, dim=-1))
        out = (weights @ v).transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(out)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden, context, dropout):
        super().__init__()
        self.attn_norm = RMSNorm(dim)
        self.attn = Attention(dim, heads, kv_heads, context, dropout)
        self.mlp_norm = RMSNorm(dim)
        self.mlp = SwiGLU(dim, hidden)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.drop(self.attn(self.attn_norm(x)))
        return x + self.drop(self.mlp(self.mlp_norm(x)))


class Decoder(nn.Module):
    def __init__(self, vocab=128, dim=64, heads=4, kv_heads=2, hidden=160, depth=2, context=64,
                 dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.Sequential(*[Block(dim, heads, kv_heads, hidden, context, dropout)
                                      for _ in range(depth)])
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        return self.head(self.norm(self.layers(self.embed(ids))))


def decoder():
    torch.manual_seed(0)
    return Decoder()


def decoder_dropout():
    torch.manual_seed(0)
    return Decoder(dropout=0.1)


if __name__ == "__main__":
    print(tuple(decoder()(torch.randint(0, 128, (2, 16))).shape))
