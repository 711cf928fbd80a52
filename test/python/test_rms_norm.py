"""RMS norm imports as one fused het.rms_norm (python/het/aten/norm.py).

Every way PyTorch users write it (Llama's `LlamaRMSNorm`, `torch.nn.RMSNorm`,
`F.rms_norm`, the hand-written formula in either multiplication order, and
without a weight) becomes exactly one het.rms_norm with none of the
decomposed ops left, and the imported model matches PyTorch: the forward
loss within 1e-5 and a 20-step SGD loss trace within 1e-4 (relative, f32).
A chain whose intermediates are used elsewhere stays op by op.
"""

import copy
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import het
from conftest import feed, rel, torch_loss

STEPS = 20
LR = 0.1
D = 16


class HandWritten(nn.Module):
    def __init__(self, weight_first, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(D))
        self.weight_first, self.eps = weight_first, eps

    def forward(self, x):
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * (x * r) if self.weight_first else x * r * self.weight


class Functional(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(D))

    def forward(self, x):
        return F.rms_norm(x, (D,), self.weight, 1e-5)


class SharedRsqrt(nn.Module):
    """The rsqrt is also used outside the norm: no fusion."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(D))

    def forward(self, x):
        r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        return x * r * self.weight + r


def llama_rms_norm():
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    return LlamaRMSNorm(D, eps=1e-6)


NORMS = {
    "llama": llama_rms_norm,
    "nn_rms_norm": lambda: nn.RMSNorm(D),
    "nn_rms_norm_eps": lambda: nn.RMSNorm(D, eps=1e-5),
    "nn_rms_norm_no_weight": lambda: nn.RMSNorm(D, elementwise_affine=False),
    "functional": Functional,
    "weight_first": lambda: HandWritten(True),
    "weight_last": lambda: HandWritten(False, eps=1e-2),
}


class Net(nn.Module):
    """linear -> norm -> gelu -> linear, over [batch, seq, features]."""

    def __init__(self, norm):
        super().__init__()
        self.inp = nn.Linear(8, D)
        self.norm = norm
        self.out = nn.Linear(D, 5)

    def forward(self, x):
        return self.out(F.gelu(self.norm(self.inp(x))))


def make(norm_factory):
    torch.manual_seed(0)
    model = Net(norm_factory())
    with torch.no_grad():  # weights away from 1, so their gradient matters
        for p in model.norm.parameters():
            p.uniform_(0.5, 1.5)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 4, 8, generator=g) * 2
    y = torch.randint(0, 5, (3, 4), generator=g)
    return model, x, y


def count(op, prog):
    return len(re.findall(rf"= het\.{op} ", prog))


@pytest.mark.parametrize("name", NORMS)
def test_imports_as_one_rms_norm(name):
    model, x, y = make(NORMS[name])
    prog = het.from_torch(model, x, loss="cross_entropy", target=y)
    assert count("rms_norm", prog) == 1, prog
    # none of the decomposed chain is left (gelu is het.gelu, not a body)
    assert "het.elementwise" not in prog and "het.reduce_mean" not in prog, prog
    assert count("mul", prog) == 0, prog
    if name == "nn_rms_norm_no_weight":
        assert re.search(r"het\.rms_norm %\w+, %const\d+ ", prog), prog
    else:
        assert re.search(r"het\.rms_norm %\w+, %p_norm\.weight ", prog), prog


def test_epsilon_is_the_models():
    """Llama's 1e-6 is het.rms_norm's default; nn.RMSNorm(eps=1e-5) keeps its
    float32-rounded value, and without eps it uses float32's machine epsilon."""
    eps = {}
    for name in ("llama", "nn_rms_norm", "nn_rms_norm_eps", "weight_last"):
        model, x, y = make(NORMS[name])
        prog = het.from_torch(model, x, loss="cross_entropy", target=y)
        m = re.search(r"het\.rms_norm [^{]*\{([^}]*)\}", prog)
        found = re.search(r"epsilon = (\S+) : f64", m.group(1))
        eps[name] = float(found.group(1)) if found else None
    assert eps["llama"] is None
    assert eps["nn_rms_norm"] == torch.finfo(torch.float32).eps
    assert eps["nn_rms_norm_eps"] == float(torch.tensor(1e-5, dtype=torch.float32))
    assert eps["weight_last"] == 1e-2


@pytest.mark.parametrize("name", NORMS)
def test_matches_pytorch(name, het_eval):
    model, x, y = make(NORMS[name])
    prog = het.from_torch(model, x, loss="cross_entropy", target=y)
    start = copy.deepcopy(model)
    model.train()
    with torch.no_grad():
        expected = float(torch_loss(model, x, y))
    got = float(next(iter(het.evaluate(prog, feed(prog, x, y)).values())))
    assert rel(got, expected) <= 1e-5, (got, expected)

    result = het.train(prog, feed(prog, x, y), steps=STEPS, optimizer="sgd", learning_rate=LR)
    model = start
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    trace = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch_loss(model, x, y)
        loss.backward()
        opt.step()
        trace.append(float(loss))
    err = max(rel(a, b) for a, b in zip(result.losses, trace))
    print(f"{name}: forward {rel(got, expected):.3g}, max relative error over {STEPS} steps {err:.3g}")
    assert len(result.losses) == STEPS
    assert trace[-1] < trace[0], "the reference must actually train"
    assert err <= 1e-4


def test_shared_intermediate_stays_unfused(het_eval):
    model, x, y = make(SharedRsqrt)
    prog = het.from_torch(model, x, loss="cross_entropy", target=y)
    assert count("rms_norm", prog) == 0, prog
    assert "het.reduce_mean" in prog
    with torch.no_grad():
        expected = float(torch_loss(model, x, y))
    got = float(next(iter(het.evaluate(prog, feed(prog, x, y)).values())))
    assert rel(got, expected) <= 1e-5
