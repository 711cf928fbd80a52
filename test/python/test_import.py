"""Structure of the imported programs: no tools needed except where noted."""

import re

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import het
import models
from conftest import need_tool


def imported(name):
    model, x, y = models.make(name)
    return model, x, y, het.from_torch(model, x, loss="cross_entropy", target=y)


@pytest.mark.parametrize("name", models.MODELS)
def test_parameters_are_marked_and_named(name):
    model, _, _, prog = imported(name)
    names = [n for n, _ in model.named_parameters()]
    # a parameter split by rows (nanoGPT's fused q/k/v) appears as w[a:b] slices
    base = list(dict.fromkeys(re.sub(r"\[\d+:\d+\]$", "", k) for k in prog.params))
    assert base == names
    for key, value in prog.params.items():
        assert re.search(r"\{het\.param, het\.name = \"" + re.escape(key) + r"\"\}", prog), key
        m = re.fullmatch(r"(.*)\[(\d+):(\d+)\]", key)
        want = model.get_parameter(m.group(1))[int(m.group(2)):int(m.group(3))] if m else \
            model.get_parameter(key)
        np.testing.assert_array_equal(value, want.detach().numpy())
    assert '{het.name = "input"}' in prog and '{het.name = "target"}' in prog
    # the loss first; BatchNorm's running statistics after it (state)
    assert re.search(r"\) *\n *-> \(?tensor<f32>[,)]? *\{?", prog)


@pytest.mark.parametrize("name", models.MODELS)
def test_every_op_has_a_layer(name):
    _, _, _, prog = imported(name)
    ops = [line for line in prog.splitlines() if re.match(r"\s+%.* = het\.", line)]
    assert ops
    for line in ops:
        assert re.search(r"het\.layer = \d+ : i64", line), line
    layers = [int(m) for m in re.findall(r"het\.layer = (\d+)", prog)]
    assert layers == sorted(layers), "layer ids must not decrease along the program"


@pytest.mark.parametrize("name", models.MODELS)
def test_verifies_with_het_opt(name):
    need_tool("het-opt")
    _, _, _, prog = imported(name)
    out = het.het_opt(prog)
    assert "het.param" in out


def test_gpt_layers_follow_blocks():
    model, x, y, prog = imported("gpt")
    # wte, wpe, blocks.0, blocks.1, ln_f, lm_head: one id each
    assert prog.num_layers == 6
    lines = prog.splitlines()

    def layer_of(pattern):
        return {int(re.search(r"het\.layer = (\d+)", l).group(1)) for l in lines if re.search(pattern, l)}

    assert layer_of(r"het\.layer_norm %\w+, %p_blocks\.0\.ln_1") == {2}
    assert layer_of(r"het\.layer_norm %\w+, %p_blocks\.1\.ln_1") == {3}
    assert layer_of(r"het\.cross_entropy") == {5}


def test_gpt_attention_is_causal_scaled_softmax():
    _, _, _, prog = imported("gpt")
    softmaxes = re.findall(r"het\.softmax .*", prog)
    assert len(softmaxes) == 2
    for s in softmaxes:
        assert "causal" in s and "scale = 0.25 : f64" in s
    # the positions (torch.arange) become a constant argument with its value exported
    assert list(prog.constants) == ["const.0"]
    np.testing.assert_array_equal(prog.constants["const.0"], np.arange(16))
    assert "het.where" not in prog and "-inf" not in prog


def test_linear_from_addmm_uses_pytorch_weight_layout():
    _, _, _, prog = imported("mlp")
    assert prog.count("het.linear") == 3
    assert "het.transpose" not in prog and "het.matmul" not in prog
    assert "tensor<128x64xf32>" in prog  # fc1.weight stays [out, in]


def test_batch_norm_is_training_mode():
    _, _, _, prog = imported("cnn")
    assert prog.count("het.batch_norm ") == 3
    assert "batch_norm_inference" not in prog
    # running statistics are state: arguments marked het.state and results
    # of the same names (docs/python.md), never parameters
    for layer in ("block1.1", "block2.1", "block3.1"):
        for buffer in ("running_mean", "running_var", "num_batches_tracked"):
            name = f"{layer}.{buffer}"
            assert f'{{het.state, het.name = "{name}"}}' in prog, name
            assert f'{{het.name = "{name}"}}' in prog.split("->", 1)[1], name
    assert prog.count("het.batch_norm_running_stats") == 3
    assert not any("running" in k for k in prog.params)


def test_resnet_structure():
    model, _, _, prog = imported("resnet")
    assert prog.count("het.conv2d") == 8 and prog.count("het.batch_norm ") == 8
    assert "het.max_pool2d" in prog and "het.reduce_mean" in prog  # AdaptiveAvgPool2d((1, 1))
    assert "strides = array<i64: 2, 2>" in prog
    # residual additions
    assert prog.count("het.add") == 3
    # layer1.0, layer1.1 and layer2.0 are separate blocks
    block_layers = {}
    for line in prog.splitlines():
        m = re.search(r"%p_(layer\d\.\d)\.", line)
        if m and "het.conv2d" in line:
            block_layers.setdefault(m.group(1), set()).add(
                int(re.search(r"het\.layer = (\d+)", line).group(1)))
    assert len(block_layers) == 3 and all(len(v) == 1 for v in block_layers.values())
    assert len(set().union(*block_layers.values())) == 3


def test_save_writes_mlir_and_npz(tmp_path):
    _, _, _, prog = imported("mlp")
    mlir_path, npz_path = prog.save(tmp_path / "mlp.mlir")
    assert open(mlir_path).read() == prog
    with np.load(npz_path) as data:
        assert sorted(data.files) == sorted(prog.params)


class Odd(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = torch.sort(self.fc(x), dim=1).values
        a = torch.flip(h, [1])
        return torch.sign(a).cumsum(1)


def test_unsupported_ops_are_all_listed_with_source_lines():
    with pytest.raises(het.HetImportError) as info:
        het.from_torch(Odd(), torch.randn(4, 8), target=torch.randint(0, 8, (4,)))
    text = str(info.value)
    assert "4 PyTorch op(s) have no het mapping" in text
    for op in ("sort", "flip", "sign", "cumsum"):
        assert f"aten::{op}" in text
    assert "test_import.py" in text and "h = torch.sort(self.fc(x), dim=1).values" in text
    assert len(info.value.unsupported) == 4


@pytest.mark.parametrize("kwargs, message", [
    (dict(loss="hinge"), "unknown loss"),
    (dict(target=None), "needs an example target"),
    (dict(target=torch.randint(0, 10, (5,))), "target must be int64 class indices of shape [32]"),
    (dict(target=torch.randn(32)), "target must be int64"),
    (dict(function="bad name"), "invalid function name"),
])
def test_bad_arguments(kwargs, message):
    model, x, y = models.make("mlp")
    args = dict(loss="cross_entropy", target=y)
    args.update(kwargs)
    with pytest.raises(het.HetImportError, match=re.escape(message)):
        het.from_torch(model, x, **args)


def test_not_a_module():
    with pytest.raises(het.HetImportError, match="expected a torch.nn.Module"):
        het.from_torch(lambda x: x, torch.randn(2, 2), target=torch.zeros(2, dtype=torch.long))


def test_untraceable_model():
    class DataDependent(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x

    with pytest.raises(het.HetImportError, match="torch.export could not capture the model"):
        het.from_torch(DataDependent(), torch.randn(2, 3), target=torch.zeros(2, dtype=torch.long))


def test_loss_none_and_mse():
    class Reg(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)

    prog = het.from_torch(Reg(), torch.randn(3, 4), loss="mse", target=torch.randn(3, 2))
    assert "het.reduce_mean" in prog and "het.sub" in prog
    with pytest.raises(het.HetImportError, match="0-d loss"):
        het.from_torch(Reg(), torch.randn(3, 4), loss="none")


class LanguageModelWithLoss(nn.Module):
    """nanoGPT style: forward(idx, targets) computes F.cross_entropy itself."""

    def __init__(self):
        super().__init__()
        self.gpt = models.GPT()
        self.drop = nn.Dropout(0.0)

    def forward(self, idx, targets):
        logits = self.drop(self.gpt(idx))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def test_cross_entropy_inside_the_model_is_recognised():
    torch.manual_seed(0)
    idx, tgt = torch.randint(0, 64, (4, 16)), torch.randint(0, 64, (4, 16))
    prog = het.from_torch(LanguageModelWithLoss(), (idx, tgt), loss="none")
    assert prog.input_names == ["idx", "targets"]
    assert prog.count("het.cross_entropy") == 1
    assert '{het.name = "idx"}' in prog and '{het.name = "targets"}' in prog
    for op in ("gather", "where", "neg"):
        assert op not in prog


def test_scalar_arithmetic_becomes_constant_arguments():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            return self.fc((x * 0.5 - 1.0) / 4)

    prog = het.from_torch(Scaled(), torch.randn(6, 8), loss="mse", target=torch.randn(6, 4))
    assert sorted(prog.constants) == ["const.0", "const.1"]
    assert sorted(float(v) for v in prog.constants.values()) == [0.5, 1.0]
    # the division is exact as in PyTorch: x / 4, not x * 0.25
    assert "arith.divf" in prog and "4.0 : f32" in prog


def test_tied_weights_are_one_parameter_under_the_first_name():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(16, 8)
            self.head = nn.Linear(8, 16, bias=False)
            self.head.weight = self.embed.weight

        def forward(self, idx):
            return self.head(self.embed(idx))

    model = Tied()
    prog = het.from_torch(model, torch.randint(0, 16, (2, 4)), target=torch.randint(0, 16, (2, 4)))
    assert list(prog.params) == ["embed.weight"]
    assert prog.count("het.param") == 1
    # results keyed by either name load back into the module
    het.to_torch({"embed.weight": np.zeros((16, 8), np.float32)}, model)
    assert float(model.head.weight.abs().sum()) == 0.0


def test_norms_without_affine_get_their_own_constants():
    # Regression: constants were cached by id() of a temporary, so the
    # LayerNorm's ones(256) could come back as the BatchNorm's ones(16).
    _, _, _, prog = imported("zoo")
    shapes = [prog.constants[f"const.{i}"].shape for i in range(4)]
    assert shapes == [(16,), (16,), (256,), (256,)]
    np.testing.assert_array_equal(prog.constants["const.0"], np.ones(16))
    np.testing.assert_array_equal(prog.constants["const.1"], np.zeros(16))
    assert "groups = 8 : i64" in prog and "dilation = array<i64: 2, 2>" in prog


def test_model_with_several_outputs():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            y = self.fc(x)
            return y, y.relu()

    with pytest.raises(het.HetImportError, match="must return one tensor"):
        het.from_torch(Two(), torch.randn(2, 4), target=torch.zeros(2, dtype=torch.long))


def test_example_inputs_must_be_tensors():
    model, x, y = models.make("mlp")
    with pytest.raises(het.HetImportError, match="example input 0 is a list"):
        het.from_torch(model, ([1.0, 2.0],), target=y)


def test_split_linear_becomes_one_linear_per_row_slice():
    model, x, y, prog = imported("nanogpt")
    for block in range(2):
        for begin in (0, 32, 64):
            key = f"transformer.h.{block}.attn.c_attn.weight[{begin}:{begin + 32}]"
            assert key in prog.params and prog.params[key].shape == (32, 32)
    assert "split" not in prog.replace("%split", "%")  # no op named split remains


def test_split_of_a_shared_linear_slices_its_output():
    # The weight is used elsewhere, so it cannot become per-piece parameters:
    # one linear layer, its output sliced.
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(8, 16)

        def forward(self, x):
            a, b = self.qkv(x).split(8, dim=1)
            return a * b + self.qkv.weight.sum()

    model, x = Shared(), torch.randn(4, 8)
    prog = het.from_torch(model, x, loss="mse", target=torch.randn(4, 8))
    assert prog.count("het.linear") == 1 and prog.count("het.slice") == 2
    assert "qkv.weight[" not in str(prog.params)
