"""Hugging Face transformers models through torch.export (het.compat).

Tiny Llama, GPT-2 and BERT models with random weights
(examples/torch/hf_tiny.py; nothing is downloaded), in both of transformers'
attention implementations: het.compat.capture (what het.from_torch maps)
succeeds and the captured program computes the eager model's logits; the
mask het.compat builds without vmap equals transformers' vmapped mask
element for element; every patch is undone, also on errors; and
het.coverage agrees with the import error on which ops het does not map.
"""

import importlib.util
import os
import re

import pytest
import torch
from transformers import masking_utils

from conftest import REPO

import het
from het import compat
from het.coverage import op_coverage

spec = importlib.util.spec_from_file_location("hf_tiny", os.path.join(REPO, "examples", "torch", "hf_tiny.py"))
hf_tiny = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hf_tiny)

IDS = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))


def make(name, attn="sdpa"):
    torch.manual_seed(0)
    return hf_tiny.MODELS[name](attn)


def run_program(ep, *inputs):
    with torch.no_grad():
        return ep.module()(*inputs)


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("name", ["llama", "gpt2", "bert"])
def test_capture_matches_eager(name, attn, monkeypatch):
    model = make(name, attn).train()
    with torch.no_grad():
        ref = model(IDS)
    calls = []

    def counting(mask_function, bh_indices=True):
        calls.append(bh_indices)
        return compat_broadcast(mask_function, bh_indices)

    compat_broadcast = compat._broadcast_for_bhqkv
    monkeypatch.setattr(compat, "_broadcast_for_bhqkv", counting)
    with compat.exportable(model):
        exported = torch.export.export(model, (IDS,))
    # Llama and GPT-2 build their masks in masking_utils (without het.compat,
    # its vmap fails to trace in about 3 of 4 processes on torch 2.6); BERT
    # builds its own.
    assert len(calls) == (0 if name == "bert" else 1)
    decomposed = compat.capture(model, IDS)  # export + run_decompositions, as het.from_torch
    out, out_decomposed = run_program(exported, IDS), run_program(decomposed, IDS)
    assert out.shape == ref.shape == ((2, 5) if name == "bert" else (2, 16, 128))
    # Measured (|logits| < 1): captured, 0 except Llama with SDPA (1.8e-7:
    # eager mode passes SDPA is_causal, the capture an explicit mask);
    # decomposed, 0 to 2.1e-7 (SiLU and the attention decompose into other
    # float ops).
    assert torch.allclose(out, ref, rtol=0, atol=1e-6), (out - ref).abs().max()
    assert torch.allclose(out_decomposed, ref, rtol=0, atol=1e-6), (out_decomposed - ref).abs().max()
    if attn == "eager" or name == "bert":
        assert torch.equal(out, ref)


def _mask_functions():
    left_padding = torch.tensor([0, 3])
    packed = masking_utils.find_packed_sequence_indices(torch.tensor([[0, 1, 2, 3, 0, 1, 2, 0], list(range(8))]))
    causal = masking_utils.causal_mask_function
    return {
        "causal": causal,
        "sliding": masking_utils.sliding_window_causal_mask_function(3),
        "chunked": masking_utils.chunked_causal_mask_function(3, left_padding),
        "packed": masking_utils.and_masks(causal, masking_utils.packed_sequence_mask_function(packed)),
        "or": masking_utils.or_masks(masking_utils.sliding_window_causal_mask_function(2),
                                     lambda b, h, q, kv: kv == 0),
    }


@pytest.mark.parametrize("kind", ["causal", "sliding", "chunked", "packed", "or"])
@pytest.mark.parametrize("padded", [False, True])
def test_masks_equal_the_vmapped_ones(kind, padded):
    mask_function = _mask_functions()[kind]
    attention_mask = torch.tensor([[1] * 8, [0, 0, 0] + [1] * 5], dtype=torch.bool) if padded else None
    args = dict(batch_size=2, cache_position=torch.arange(8), kv_length=8, mask_function=mask_function,
                attention_mask=attention_mask, allow_is_causal_skip=False)
    ref_sdpa = masking_utils.sdpa_mask(**args)
    ref_eager = masking_utils.eager_mask(**args)
    ref_older = masking_utils.sdpa_mask_older_torch(**args) if kind in ("causal", "sliding", "or") else None
    with compat.exportable(make("gpt2")):
        assert masking_utils._vmap_for_bhqkv is compat._broadcast_for_bhqkv
        new_sdpa = masking_utils.sdpa_mask(**args)
        new_eager = masking_utils.eager_mask(**args)
        new_older = masking_utils.sdpa_mask_older_torch(**args) if ref_older is not None else None
    assert ref_sdpa.shape == (2, 1, 8, 8) and ref_sdpa.dtype == torch.bool
    assert 0 < int(ref_sdpa.sum()) < ref_sdpa.numel()  # a real mask, not all True or False
    assert torch.equal(new_sdpa, ref_sdpa) and new_sdpa.is_contiguous()
    assert torch.equal(new_eager, ref_eager)
    if ref_older is not None:
        assert torch.equal(new_older, ref_older)


def test_patches_are_undone_also_on_errors():
    from torch._decomp import decomposition_table

    sdpa_cpu = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    model = make("llama")
    vmap, decomposition = masking_utils._vmap_for_bhqkv, decomposition_table[sdpa_cpu]
    assert model.model.config.use_cache is True
    with pytest.raises(RuntimeError, match="boom"):
        with compat.exportable(model):
            assert model.model.config.use_cache is False
            assert decomposition_table[sdpa_cpu] is compat._sdpa_cpu_decomposition
            raise RuntimeError("boom")
    assert masking_utils._vmap_for_bhqkv is vmap
    assert decomposition_table[sdpa_cpu] is decomposition
    assert model.model.config.use_cache is True


def test_plain_modules_get_only_the_sdpa_fix():
    assert not compat.uses_transformers(torch.nn.Linear(2, 2))
    assert compat.uses_transformers(make("bert"))
    vmap = masking_utils._vmap_for_bhqkv
    with compat.exportable(torch.nn.Linear(2, 2)):
        assert masking_utils._vmap_for_bhqkv is vmap


@pytest.mark.parametrize("name", ["llama", "gpt2", "bert"])
def test_coverage_agrees_with_the_import_error(name):
    """het.from_torch gets past torch.export; whatever it still rejects is
    exactly what het.coverage reports (which ops those are changes as het
    learns ops, so it is not pinned here)."""
    model = make(name)
    rows = op_coverage(model, (IDS,))
    unmapped = sorted((r.op, where.split(" (", 1)[0]) for r in rows for _, where in r.unmapped)
    with torch.no_grad():
        out = model(IDS)
    target = torch.randint(0, out.shape[-1], out.shape[:-1])
    try:
        het.from_torch(model, IDS, target=target)
        reported = []
    except het.HetImportError as e:
        assert "torch.export could not capture" not in str(e)
        reported = sorted(parse_unsupported(u) for u in e.unsupported)
    assert unmapped == reported


def parse_unsupported(entry):
    """("aten::pow.Tensor_Scalar", "/path/file.py:65") from one entry of
    HetImportError.unsupported ("  OP: REASON\n      at FILE:LINE (FUNC): CODE")."""
    head, at = entry.split("\n      at ", 1)
    return head.strip().split(": ", 1)[0], at.split(" (", 1)[0]


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_decoder_attention_fuses(name, attn):
    """transformers' causal attention, in both implementations, imports as a
    causal softmax with the 1/sqrt(head dim) scale folded in (GPT-2 eager's
    where(bias, x, finfo.min) + additive 0/finfo.min mask and division;
    the SDPA math form's sqrt(scale) on q and on k and its additive mask),
    so that het-fuse-attention makes one het.attention per layer."""
    from conftest import need_tool
    need_tool("het-opt")
    model = make(name, attn)
    with torch.no_grad():
        out = model(IDS)
    prog = het.from_torch(model, IDS, target=torch.randint(0, out.shape[-1], out.shape[:-1]))
    layers = model.model.config.num_hidden_layers
    head_dim = model.model.config.hidden_size // model.model.config.num_attention_heads
    softmaxes = re.findall(r"het\.softmax .*", prog)
    assert len(softmaxes) == layers
    for s in softmaxes:
        assert "causal" in s and f"scale = {head_dim ** -0.5!r} : f64" in s, s
    fused = het.het_opt(prog, ["--het-fuse-attention"])
    assert fused.count("het.attention ") == layers
    assert "het.softmax" not in fused and "-3.40282" not in prog  # no finfo.min mask left
