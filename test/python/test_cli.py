"""`python -m het.export`: the command line alone imports and trains a model
file the tests have never seen (examples/torch/), and fails loudly on models
it cannot import and on bad arguments."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import REPO, need_tool

EXAMPLES = os.path.join(REPO, "examples", "torch")


def cli(*args, timeout=900):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "het.export", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=REPO)


def test_import_only_writes_mlir_params_and_data(tmp_path):
    out = tmp_path / "net.mlir"
    proc = cli(os.path.join(EXAMPLES, "cifar_net.py") + ":Net", "--input-shape", "16,3,32,32",
               "--loss", "cross_entropy", "-o", out)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.count("het.conv2d") == 2 and text.count("het.linear") == 3
    with np.load(tmp_path / "net.npz") as params:
        assert sorted(params.files) == sorted(
            ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias",
             "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"])
    with np.load(tmp_path / "net.data.npz") as data:
        assert data["input"].shape == (16, 3, 32, 32) and data["target"].shape == (16,)


@pytest.mark.parametrize("spec, shape, extra, lr", [
    ("cifar_net.py:Net", "16,3,32,32", [], "0.05"),
    ("char_transformer.py:tiny", "8,32", ["--input-dtype", "int64"], "0.05"),
])
def test_unseen_model_trains_through_the_cli(tmp_path, spec, shape, extra, lr):
    need_tool("het-opt")
    need_tool("het-eval")
    plot = tmp_path / "loss.png"
    proc = cli(os.path.join(EXAMPLES, spec), "--input-shape", shape, *extra, "--loss", "cross_entropy",
               "-o", tmp_path / "m.mlir", "--train-steps", "20", "--lr", lr, "--check", "--plot", plot)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = [l for l in proc.stdout.splitlines() if l.startswith("step ")]
    assert len(steps) == 20
    losses = [float(l.split()[-1]) for l in steps]
    assert losses[-1] < losses[0]
    assert "max relative difference over 20 steps" in proc.stdout
    assert plot.stat().st_size > 1000


def test_unsupported_ops_exit_nonzero_with_the_list(tmp_path):
    model = tmp_path / "odd.py"
    model.write_text(textwrap.dedent("""\
        import torch
        import torch.nn as nn

        class Odd(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)

            def forward(self, x):
                h = torch.sign(self.fc(x))
                return torch.cumsum(h, dim=1)
        """))
    proc = cli(f"{model}:Odd", "--input-shape", "4,8", "-o", tmp_path / "odd.mlir")
    assert proc.returncode == 1
    assert "2 PyTorch op(s) have no het mapping" in proc.stderr
    assert "aten::sign" in proc.stderr and "aten::cumsum" in proc.stderr
    assert f"{model}:10" in proc.stderr and f"{model}:11" in proc.stderr
    assert not (tmp_path / "odd.mlir").exists()


@pytest.mark.parametrize("args, code, message", [
    (["nofile.py:Net", "--input-shape", "2,3", "-o", "x.mlir"], 1, "does not exist"),
    (["examples/torch/cifar_net.py", "--input-shape", "2,3", "-o", "x.mlir"], 1, "expected FILE.py:FACTORY"),
    (["examples/torch/cifar_net.py:Nope", "--input-shape", "2,3", "-o", "x.mlir"], 1, "no callable 'Nope'"),
    (["examples/torch/cifar_net.py:Net", "--input-shape", "2,x", "-o", "x.mlir"], 2, "comma-separated"),
    (["examples/torch/cifar_net.py:Net", "--input-shape", "2,3", "-o", "x.mlir"], 1,
     "the model does not run on inputs of shape [[2, 3]]"),
    (["examples/torch/cifar_net.py:Net", "--input-shape", "2,3,32,32", "--loss", "l1", "-o", "x.mlir"], 2,
     "invalid choice"),
])
def test_bad_command_lines(tmp_path, args, code, message):
    args = [a if a != "x.mlir" else str(tmp_path / "x.mlir") for a in args]
    proc = cli(*args)
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr
