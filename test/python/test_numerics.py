"""het matches PyTorch: forward loss (1e-5 relative) and a 20-step SGD loss
trace (1e-4 relative) for every covered model, from the same initial
parameters and data. The runner is the reference evaluator het-eval (the
compiled executable replaces it once het-compile exists, issue 4)."""

import copy
import re

import numpy as np
import pytest
import torch

import het
import models
from conftest import feed, rel, torch_loss

STEPS = 20
LR = 0.1


@pytest.mark.parametrize("name", models.MODELS)
def test_forward_loss_matches_pytorch(name, het_eval, record_property):
    model, x, y = models.make(name)
    prog = het.from_torch(model, x, loss="cross_entropy", target=y)
    model.train()
    with torch.no_grad():
        expected = float(torch_loss(model, x, y))
    got = het.evaluate(prog, feed(prog, x, y))
    # the loss, then the running statistics the forward updated
    assert sorted(got) == sorted(["result0", *prog.state]), got
    loss = float(got["result0"])
    err = rel(loss, expected)
    record_property("forward_rel_err", err)
    print(f"{name}: het {loss:.9g} pytorch {expected:.9g} relative error {err:.3g}")
    assert err <= 1e-5


@pytest.mark.parametrize("fuse", [False, True], ids=["unfused", "fused"])
@pytest.mark.parametrize("name", models.MODELS)
def test_sgd_trace_matches_pytorch(name, fuse, het_eval, record_property):
    """fused: the step after het-fuse (het-training-pipeline), the form code
    generation starts from."""
    model, x, y = models.make(name)
    prog = het.from_torch(model, x, loss="cross_entropy", target=y)
    result = het.train(prog, feed(prog, x, y), steps=STEPS, optimizer="sgd", learning_rate=LR, fuse=fuse)
    start = copy.deepcopy(model)

    opt = torch.optim.SGD(model.parameters(), lr=LR)
    model.train()
    expected = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch_loss(model, x, y)
        loss.backward()
        opt.step()
        expected.append(float(loss))

    errs = [rel(a, b) for a, b in zip(result.losses, expected)]
    record_property("trace_max_rel_err", max(errs))
    print(f"{name}: het   {' '.join(f'{v:.6g}' for v in result.losses)}")
    print(f"{name}: torch {' '.join(f'{v:.6g}' for v in expected)}")
    print(f"{name} ({'fused' if fuse else 'unfused'}): max relative error over {STEPS} steps {max(errs):.3g}")
    assert len(result.losses) == STEPS
    assert expected[-1] < expected[0], "the reference must actually train"
    assert max(errs) <= 1e-4
    # the final parameters come back under their PyTorch names (row slices
    # of split layers as "w[a:b]"): loaded into the untrained copy they
    # equal PyTorch's trained parameters
    het.to_torch(result, start)
    for (pname, p), (_, q) in zip(model.named_parameters(), start.named_parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-3, atol=1e-4,
                                   err_msg=pname)
    loaded = {re.sub(r"\[\d+:\d+\]$", "", k) for k in result}
    assert {n for n, _ in model.named_parameters()} <= loaded


@pytest.mark.parametrize("name, optimizer, options, make_torch_opt", [
    ("mlp", "sgd", dict(learning_rate=0.05, momentum=0.9, weight_decay=1e-4),
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4)),
    ("gpt", "adam", dict(learning_rate=1e-2),
     lambda p: torch.optim.Adam(p, lr=1e-2)),
])
def test_other_optimizers_match_pytorch(name, optimizer, options, make_torch_opt, het_eval):
    model, x, y = models.make(name)
    prog = het.from_torch(model, x, loss="cross_entropy", target=y)
    result = het.train(prog, feed(prog, x, y), steps=STEPS, optimizer=optimizer, **options)
    opt = make_torch_opt(model.parameters())
    model.train()
    expected = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch_loss(model, x, y)
        loss.backward()
        opt.step()
        expected.append(float(loss))
    errs = [rel(a, b) for a, b in zip(result.losses, expected)]
    print(f"{name} {optimizer}: max relative error over {STEPS} steps {max(errs):.3g}")
    assert expected[-1] < expected[0]
    assert max(errs) <= 1e-4


@pytest.mark.parametrize("name", models.MODELS)
def test_float64_forward_and_trace_agree_to_rounding(name, het_eval):
    """In float64 (model and evaluator) the only differences left are
    rounding: the import is exact, not merely close."""
    model, x, y = models.make(name)
    model = model.double()
    if x.is_floating_point():
        x = x.double()
    prog = het.from_torch(model, x, loss="cross_entropy", target=y)
    assert "f32" not in prog
    result = het.train(prog, feed(prog, x, y), steps=5, optimizer="sgd", learning_rate=LR, precision="f64")
    start = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    model.train()
    expected = []
    for _ in range(5):
        opt.zero_grad()
        loss = torch_loss(model, x, y)
        loss.backward()
        opt.step()
        expected.append(float(loss))
    errs = [rel(a, b) for a, b in zip(result.losses, expected)]
    # het-eval prints losses with 9 significant digits; the parameters come
    # back at full precision.
    assert max(errs) <= 1e-8
    worst = 0.0
    het.to_torch(result, start)
    for (pname, p), (_, q) in zip(model.named_parameters(), start.named_parameters()):
        want = p.detach().numpy()
        got = q.detach().numpy()
        worst = max(worst, float(np.max(np.abs(got - want) / (np.abs(want) + 1e-6))))
    print(f"{name} f64: trace {max(errs):.3g}, parameters after 5 steps {worst:.3g}")
    assert {re.sub(r"\[\d+:\d+\]$", "", k) for k in result} >= {n for n, _ in model.named_parameters()}
    assert worst <= 1e-10
