"""The PyTorch models the importer tests cover, written as PyTorch users write
them (torch.nn modules, functional calls in forward)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in=64, hidden=(128, 64), classes=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden[0])
        self.fc2 = nn.Linear(hidden[0], hidden[1])
        self.head = nn.Linear(hidden[1], classes)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.head(x)


class SmallCNN(nn.Module):
    """Conv-BN-ReLU blocks with max, average and adaptive average pooling."""

    def __init__(self, classes=10):
        super().__init__()
        self.block1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.block2 = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),
                                    nn.ReLU(), nn.MaxPool2d(2))
        self.block3 = nn.Sequential(nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16),
                                    nn.ReLU(), nn.AvgPool2d(2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = self.block3(self.block2(self.block1(x)))
        x = torch.flatten(self.pool(x), 1)
        return self.fc(x)


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock."""

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class TinyResNet(nn.Module):
    """torchvision's ResNet layout, scaled down: stem, two stages of basic
    blocks (the second downsamples with a 1x1 convolution), global pooling."""

    def __init__(self, classes=10, width=8):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = nn.Sequential(BasicBlock(width, width), BasicBlock(width, width))
        down = nn.Sequential(nn.Conv2d(width, 2 * width, 1, stride=2, bias=False), nn.BatchNorm2d(2 * width))
        self.layer2 = nn.Sequential(BasicBlock(width, 2 * width, stride=2, downsample=down))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, block_size, sdpa=False):
        super().__init__()
        self.n_head = n_head
        self.sdpa = sdpa
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        hs = C // self.n_head
        q = self.query(x).view(B, T, self.n_head, hs).transpose(1, 2)
        k = self.key(x).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.value(x).view(B, T, self.n_head, hs).transpose(1, 2)
        if self.sdpa:  # nanoGPT's fast path
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d_model, n_head, block_size, sdpa=False):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, block_size, sdpa)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """A small GPT-2 style decoder (minGPT/nanoGPT layout)."""

    def __init__(self, vocab=64, block_size=16, d_model=32, n_head=2, n_layer=2, sdpa=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(block_size, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_head, block_size, sdpa) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def make(name, seed=0):
    """(model, input, target) for a covered model, deterministic per seed."""
    torch.manual_seed(seed)
    if name == "mlp":
        return MLP(), torch.randn(32, 64), torch.randint(0, 10, (32,))
    if name == "cnn":
        return SmallCNN(), torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))
    if name == "resnet":
        return TinyResNet(), torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
    if name == "gpt":
        model = GPT()
        return model, torch.randint(0, 64, (4, 16)), torch.randint(0, 64, (4, 16))
    if name == "gpt_sdpa":
        model = GPT(sdpa=True)
        return model, torch.randint(0, 64, (4, 16)), torch.randint(0, 64, (4, 16))
    if name == "zoo":
        return LayerZoo(), torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))
    if name == "nanogpt":
        return NanoGPT(), torch.randint(0, 64, (4, 16)), torch.randint(0, 64, (4, 16))
    raise KeyError(name)


MODELS = ("mlp", "cnn", "resnet", "gpt", "gpt_sdpa", "zoo", "nanogpt")


class LayerZoo(nn.Module):
    """Less common layer settings: grouped (depthwise) and dilated
    convolutions, BatchNorm/LayerNorm without affine parameters, padded
    average pooling that excludes the padding, exact GELU, scalar arithmetic,
    nn.Flatten and a zero dropout."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=8, bias=False)
        self.pointwise = nn.Conv2d(8, 16, 1)
        self.bn = nn.BatchNorm2d(16, affine=False)
        self.pool = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
        self.flatten = nn.Flatten()
        self.norm = nn.LayerNorm(16 * 4 * 4, elementwise_affine=False)
        self.drop = nn.Dropout(0.0)
        self.fc = nn.Linear(16 * 4 * 4, classes)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = self.pointwise(self.depthwise(x))
        x = self.pool(F.gelu(self.bn(x)))
        x = self.norm(self.flatten(x))
        return self.fc(self.drop(x * 2.0 - 0.5) / 3.0)


class NanoGPTAttention(nn.Module):
    """nanoGPT's CausalSelfAttention: one fused q/k/v projection, split."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class NanoGPTBlock(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = NanoGPTAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(self.gelu(self.c_fc(self.ln_2(x))))


class NanoGPT(nn.Module):
    """nanoGPT's layout: transformer ModuleDict, fused attention projection,
    scaled_dot_product_attention, lm_head tied to the token embedding."""

    def __init__(self, vocab=64, block_size=16, n_embd=32, n_head=2, n_layer=2):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([NanoGPTBlock(n_embd, n_head) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd),
        ))
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # nanoGPT ties them this way round
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, mean=0.0, std=0.02)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))
