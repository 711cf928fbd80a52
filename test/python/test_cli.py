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


FAILING_MODELS = textwrap.dedent("""\
    import torch
    import torch.nn as nn

    class Branch(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            if x.sum() > 0:
                return self.fc(x)
            return -self.fc(x)

    class Restride(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            return torch.as_strided(self.fc(x), (4, 2), (1, 4))
    """)


def error_lines(stderr):
    """The lines of stderr that are not indented details or Python's warnings."""
    return [line for line in stderr.splitlines()
            if line and not line.startswith(" ") and "UserWarning" not in line]


@pytest.mark.parametrize("factory, stage, line", [
    # torch.export cannot capture data-dependent control flow
    ("Branch", "torch.export could not capture the model", 10),
    # captured, but a restride het cannot express (only reshapes are)
    ("Restride", "have no het mapping", 20),
])
def test_each_failing_stage_is_one_error_line(tmp_path, factory, stage, line):
    """A model that fails in capture or in mapping ends as one `het.export:
    error:` line (indented details may follow) naming the model's source
    line, never a traceback, and torch's own error log stays quiet."""
    model = tmp_path / "failing.py"
    model.write_text(FAILING_MODELS)
    proc = cli(f"{model}:{factory}", "--input-shape", "4,8", "-o", tmp_path / "out.mlir")
    assert proc.returncode == 1, proc.stderr
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("het.export: error: "), proc.stderr
    assert stage in lines[0]
    assert f"{model}:{line}" in proc.stderr
    assert "Traceback" not in proc.stderr and "fake_tensor.py" not in proc.stderr
    debug = cli(f"{model}:{factory}", "--input-shape", "4,8", "-o", tmp_path / "out.mlir", "--debug")
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_decomposition_failure_names_the_stage_and_the_source_line(monkeypatch):
    """torch's decomposition to core ATen failing (before het.compat's SDPA
    layout fix, torchvision's ViT did: "Cannot view a tensor ..."). No model
    still fails there with torch 2.6 and het's fixes, so this injects the
    error torch raised, with its "Original traceback", into a real capture."""
    import torch
    import het
    from het import compat

    def failing(self, *args, **kwargs):
        raise ValueError(
            "Cannot view a tensor with shape torch.Size([17, 4, 4, 16]) and strides "
            "(64, 1088, 16, 1) as a tensor with shape (68, 64)!\n\nWhile executing %view_6\n"
            "Original traceback:\n"
            '  File "/site-packages/torchvision/models/vision_transformer.py", line 113, in forward\n'
            "    x, _ = self.self_attention(x, x, x, need_weights=False)\n")

    monkeypatch.setattr(torch.export.ExportedProgram, "run_decompositions", failing)
    with pytest.raises(het.HetImportError) as e:
        compat.capture(torch.nn.Linear(8, 4), (torch.randn(2, 8),))
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("torch's decomposition of the captured model to core ATen failed: "
                              "ValueError: Cannot view a tensor")
    assert message.endswith("vision_transformer.py:113 (forward): "
                            "x, _ = self.self_attention(x, x, x, need_weights=False)")


def test_internal_errors_are_one_line_too(tmp_path, monkeypatch, capsys):
    """A defect in het's importer (here an injected KeyError) exits 3 with one
    error line that asks for a report; --debug keeps the traceback."""
    from het import export, importer

    def broken(*args, **kwargs):
        raise KeyError("no handler state")

    monkeypatch.setattr(importer, "from_torch", broken)
    args = [os.path.join(EXAMPLES, "cifar_net.py") + ":Net", "--input-shape", "2,3,32,32",
            "-o", str(tmp_path / "x.mlir")]
    assert export.main(args) == 3
    err = capsys.readouterr().err
    assert error_lines(err) == [line for line in err.splitlines() if line]
    assert len(error_lines(err)) == 1
    assert err.startswith("het.export: error: internal error while exporting ")
    assert "KeyError" in err and "--debug" in err and "Traceback" not in err
    assert export.main(args + ["--debug"]) == 3
    assert "Traceback" in capsys.readouterr().err
