"""`python -m het.coverage`: the ATen ops of a model file, each with whether
het maps it; exit 0 when all do, 1 (naming the op and its source line) when
not, in agreement with `python -m het.export`'s import error."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

EXAMPLES = os.path.join(REPO, "examples", "torch")


def run(tool, *args, timeout=900):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", tool, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO)


def rows(stdout):
    """{op: (count, het)} from the report's op lines."""
    found = {}
    for line in stdout.splitlines():
        m = re.fullmatch(r"\s*(\d+)\s+(yes|const|skip|NO)\s+(\S+)(\s.*)?", line)
        if m:
            found[m.group(3)] = (int(m.group(1)), m.group(2))
    return found


def test_a_model_that_maps_exits_0():
    proc = run("het.coverage", os.path.join(EXAMPLES, "cifar_net.py") + ":Net", "--input-shape", "16,3,32,32")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ops = rows(proc.stdout)
    assert ops["aten::convolution.default"] == (2, "yes")
    assert ops["aten::addmm.default"] == (3, "yes")
    assert ops["aten::relu.default"] == (4, "yes")
    assert ops["aten::permute.default"] == (3, "skip")  # the w.t() folded into het.linear
    assert all(het != "NO" for _, het in ops.values())
    assert proc.stdout.rstrip().splitlines()[-1] == f"{len(ops)} of {len(ops)} op kinds map; 0 unmapped"


ODD = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.drop = nn.Dropout(0.5)
            self.drop_all = nn.Dropout(1.0)

        def forward(self, x):
            h = torch.erfinv(self.fc(x))
            h = self.drop_all(self.drop(h))
            return self.fc(h)
    """)


def test_a_model_that_does_not_map_exits_1_and_agrees_with_the_import(tmp_path):
    model = tmp_path / "odd.py"
    model.write_text(ODD)
    proc = run("het.coverage", f"{model}:Odd", "--input-shape", "4,8")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    ops = rows(proc.stdout)
    assert ops["aten::addmm.default"] == (2, "yes")
    # an op het has no mapping for, and one it maps only in some uses
    # (dropout with p = 1, not p = 0.5), each with its reason and first
    # source line
    assert ops["aten::erfinv.default"] == (1, "NO")
    assert ops["aten::native_dropout.default"] == (2, "NO")
    assert "no het mapping" in proc.stdout
    assert "1 of 2 rejected" in proc.stdout
    assert "dropout with p=1.0 (het.dropout takes 0 < p < 1)" in proc.stdout
    assert f"first at {model}:13 (forward): h = torch.erfinv(self.fc(x))" in proc.stdout
    assert f"first at {model}:14 (forward): h = self.drop_all(self.drop(h))" in proc.stdout
    bad = sorted(op for op, (_, het) in ops.items() if het == "NO")
    assert proc.stdout.rstrip().splitlines()[-1] == f"{len(ops) - 2} of {len(ops)} op kinds map; 2 unmapped"

    # python -m het.export rejects the same ops at the same lines
    imp = run("het.export", f"{model}:Odd", "--input-shape", "4,8", "-o", tmp_path / "odd.mlir")
    assert imp.returncode == 1
    rejected = re.findall(r"^  (aten::\S+): .*\n      at (\S+) ", imp.stderr, flags=re.M)
    assert sorted(op for op, _ in rejected) == bad
    assert sorted(where for _, where in rejected) == [f"{model}:13", f"{model}:14"]


@pytest.mark.parametrize("args, code, message", [
    (["examples/torch/cifar_net.py:Net"], 2, "--input-shape"),
    (["nofile.py:Net", "--input-shape", "2,3"], 1, "does not exist"),
    (["examples/torch/cifar_net.py:Net", "--input-shape", "2,3", "--loss", "mse"], 2, "unrecognized"),
])
def test_bad_command_lines(args, code, message):
    proc = run("het.coverage", *args)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert message in proc.stderr
