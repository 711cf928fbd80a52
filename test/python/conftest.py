"""Shared fixtures for het's Python tests.

Tools are found like the package finds them ($HET_TOOLS_DIR, <repo>/build/bin,
PATH). A test that needs het-opt or het-eval FAILS when the tool is missing:
those checks are the point of the suite and must not pass by skipping. Only
the het-plan wrapper test skips without het-plan (issue 6 builds it).
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "python"))  # the package, even if not installed

import het  # noqa: E402


def need_tool(name):
    """Path of a tool; fails the test (does not skip) when it is missing."""
    try:
        return het.find_tool(name)
    except het.HetToolError as e:
        pytest.fail(f"{e}. This check needs {name}; it cannot pass without it.")


@pytest.fixture
def het_eval():
    return need_tool("het-eval")


@pytest.fixture
def het_opt():
    return need_tool("het-opt")


# The comparison helpers of the tests that train a model in het and in
# PyTorch (test_numerics.py, test_rms_norm.py).
def torch_loss(model, x, y):
    """PyTorch's mean cross-entropy over every position, as het's loss."""
    import torch.nn.functional as F

    out = model(x)
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def feed(prog, x, y):
    """A HetProgram's initial values with the batch as `input`/`target`."""
    values = prog.initial_values()
    values.update({"input": x.numpy(), "target": y.numpy()})
    return values


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)
