"""BatchNorm running statistics: imported buffers become `het.state`
arguments that the training step returns under their names; the compiled
executable keeps them from step to step like het-eval, `het.to_torch`
writes them back into the module, and what cannot be kept is refused at
import with the reason."""

import numpy as np
import pytest
import torch
from torch import nn

import het
from conftest import need_tool


class ConvBN(nn.Module):
    def __init__(self, momentum=0.2, track=True):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8, momentum=momentum, track_running_stats=track)
        self.fc = nn.Linear(8 * 6 * 6, 10)
        self.head = nn.BatchNorm1d(10)

    def forward(self, x):
        return self.head(self.fc(torch.relu(self.bn(self.conv(x))).flatten(1)))


def batch():
    g = torch.Generator().manual_seed(0)
    return torch.randn(6, 3, 6, 6, generator=g), torch.randint(0, 10, (6,), generator=g)


def torch_steps(model, x, y, steps, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


def test_buffers_are_state_and_match_pytorch_compiled():
    need_tool("het-compile")
    torch.manual_seed(0)
    model = ConvBN()
    x, y = batch()
    prog = het.from_torch(model, (x,), target=y)
    assert sorted(prog.state) == ["bn.num_batches_tracked", "bn.running_mean", "bn.running_var",
                                  "head.num_batches_tracked", "head.running_mean",
                                  "head.running_var"]
    assert '{het.state, het.name = "bn.running_var"}' in prog
    assert prog.count("momentum = 0.2 : f64") == 1  # bn's; head keeps the default 0.1
    feed = prog.initial_values()
    feed.update({"input": x.numpy(), "target": y.numpy()})
    compiled = het.train(prog, feed, steps=5, runner="compile")
    evaluated = het.train(prog, feed, steps=5)
    reference = ConvBN()
    reference.load_state_dict(model.state_dict())
    torch_steps(reference, x, y, 5)
    for name, buffer in reference.named_buffers():
        for result in (compiled, evaluated):
            ours = np.asarray(result[name])
            if name.endswith("num_batches_tracked"):
                assert int(ours) == int(buffer) == 5
            else:
                np.testing.assert_allclose(ours, buffer.detach().numpy(), rtol=1e-4, atol=1e-6)
    # het.to_torch writes parameters and buffers back; in eval mode the
    # module then computes what PyTorch's own trained module does.
    het.to_torch(compiled, model)
    assert int(model.bn.num_batches_tracked) == 5
    model.eval()
    reference.eval()
    with torch.no_grad():
        np.testing.assert_allclose(model(x).numpy(), reference(x).numpy(), rtol=1e-4, atol=1e-5)


def test_eval_mode_imports_running_statistics_as_constants():
    model = ConvBN()
    x, y = batch()
    prog = het.from_torch(model, (x,), target=y, training=False)
    assert not prog.state
    assert prog.count("het.batch_norm_inference") == 2
    assert "het.batch_norm_running_stats" not in prog
    assert model.training  # the module's mode is left as it was


def test_without_running_statistics_nothing_is_kept():
    model = ConvBN(track=False)
    x, y = batch()
    prog = het.from_torch(model, (x,), target=y)
    assert sorted(prog.state) == ["head.num_batches_tracked", "head.running_mean",
                                  "head.running_var"]
    assert prog.count("het.batch_norm_running_stats") == 1


def test_cumulative_average_is_refused_with_the_reason():
    model = ConvBN(momentum=None)
    x, y = batch()
    with pytest.raises(het.HetImportError) as error:
        het.from_torch(model, (x,), target=y)
    assert "momentum" in str(error.value)


def test_frozen_batch_norm_fine_tunes_like_pytorch_eval_mode():
    """Imported in eval mode (running statistics as constants), the model
    trains through het.batch_norm_inference's gradient exactly as PyTorch
    trains it under model.eval(): frozen batch norm, as in fine-tuning."""
    torch.manual_seed(0)
    model = ConvBN()
    with torch.no_grad():  # statistics that are not the initial 0/1
        for bn in (model.bn, model.head):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    x, y = batch()
    prog = het.from_torch(model, (x,), target=y, training=False)
    feed = prog.initial_values()
    feed.update({"input": x.numpy(), "target": y.numpy()})
    result = het.train(prog, feed, steps=5, precision="f64")
    reference = ConvBN().double()
    reference.load_state_dict(model.state_dict())
    reference.eval()
    opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(reference(x.double()), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    np.testing.assert_allclose(result.losses, losses, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(result["bn.weight"]), reference.bn.weight.detach().numpy(),
                               rtol=1e-9)
