"""Mixture-of-experts models (python/het/moe.py, het.compat fix 4, the
het.moe_* ops).

Tiny Hugging Face Mixtral (4 experts, top-2, renormalized) and Qwen2-MoE
(top-2 without renormalization, a gated shared expert, one dense layer),
trained with the load-balancing loss (examples/torch/hf_tiny.py):
- het's fixed-shape form of the sparse blocks computes the blocks' own
  values and the models' own auxiliary loss, and the patches are undone;
- a capacity factor drops exactly the choices past each expert's rows, in
  het's slot order, and the eager ops agree with het-eval on them;
- het-compile's executable matches het-eval, and the same model as two
  data-parallel replicas and as two pipeline stages (cpu.onednn then
  cpu.mlir) matches one rank with the same tokens per micro-batch (20
  steps within 1e-5); so do expert-parallel stages: the experts over 2
  and 4 replicas and unevenly (3 + 1) over replicas of two kinds.
The 20-step match with PyTorch itself is in test_models.py.
"""

import importlib.util
import json
import os
import re
import subprocess

import numpy as np
import pytest
import torch

from conftest import REPO, need_tool

import het
from het import compat, moe, tools

spec = importlib.util.spec_from_file_location("hf_tiny", os.path.join(REPO, "examples", "torch", "hf_tiny.py"))
hf_tiny = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hf_tiny)

GEN = torch.Generator().manual_seed(3)
IDS = torch.randint(0, 128, (4, 16), generator=GEN)
LABELS = torch.randint(0, 128, (4, 16), generator=GEN)


def blocks(model):
    return [m for m in model.modules() if type(m).__name__.endswith("SparseMoeBlock")]


@pytest.mark.parametrize("name", ["mixtral", "qwen2_moe"])
def test_fixed_shape_blocks_compute_the_blocks_own_values(name):
    model = getattr(hf_tiny, name)()
    with torch.no_grad():
        expected = model(IDS, LABELS)
        hidden = torch.randn(2, 8, model.model.config.hidden_size, generator=GEN)
        block = blocks(model)[0]
        out, logits = block(hidden)
        original_forward = type(block).forward
        with compat.exportable(model):
            assert type(block).forward is not original_forward
            got = model(IDS, LABELS)
            het_out, het_logits = block(hidden)
        assert type(block).forward is original_forward  # undone
    assert torch.equal(logits, het_logits)
    assert torch.allclose(het_out, out, rtol=1e-5, atol=1e-6)
    # the loss includes router_aux_loss_coef * the load-balancing loss
    assert abs(got.item() - expected.item()) <= 1e-5 * abs(expected.item())
    with torch.no_grad():
        without_aux = model.model(input_ids=IDS).logits
    ce = torch.nn.functional.cross_entropy(without_aux.reshape(-1, 128), LABELS.reshape(-1))
    assert got.item() - ce.item() > 0.01  # the auxiliary term is there (coef 0.02 x ~2)


def test_capacity_drops_the_choices_past_each_experts_rows():
    logits = torch.randn(10, 4, generator=GEN)
    x = torch.randn(10, 3, generator=GEN)
    weights, indices = torch.ops.het.moe_router(logits, 2, True)
    capacity = moe.expert_capacity(10, 2, 4, 0.5)  # ceil(0.5 * 10 * 2 / 4) = 3
    assert capacity == 3
    rows = moe.moe_rows(indices, 4, capacity)
    # first choices take rows before any second choice of the same expert
    for e in range(4):
        first = [rows[t, 0].item() for t in range(10) if indices[t, 0] == e]
        second = [rows[t, 1].item() for t in range(10) if indices[t, 1] == e and rows[t, 1] >= 0]
        assert first[:capacity] == list(range(min(capacity, len(first))))
        assert all(r >= len(first) for r in second)
    dropped = int((rows < 0).sum())
    assert dropped == sum(max(0, int((indices == e).sum()) - capacity) for e in range(4))
    assert dropped > 0
    buffer = torch.ops.het.moe_dispatch(x, indices, 4, 0.5)
    assert buffer.shape == (4, 3, 3)
    y = torch.ops.het.moe_combine(buffer, indices, weights)
    kept = (rows >= 0).to(x.dtype)
    assert torch.allclose(y, (weights * kept).sum(-1, keepdim=True) * x, atol=1e-6)


def test_a_capacity_factor_imports_and_trains_as_pytorch_with_it(tmp_path):
    """The capped model (factor 0.5: a quarter of the choices dropped) in
    het-eval against the same fixed-shape model run by PyTorch (the eager
    het ops, which drop the same choices in the same slot order), 5 steps
    of SGD."""
    model = hf_tiny.mixtral()
    prog = het.from_torch(model, (IDS, LABELS), loss="none", input_names=["input", "labels"],
                          moe_capacity_factor=0.5)
    assert "capacity_factor = 5.0e-01" in str(prog) or "capacity_factor = 0.5" in str(prog)
    assert re.search(r"-> tensor<4x16x32xf32>", str(prog))  # ceil(0.5 * 64 * 2 / 4) = 16 rows
    feed = {k: np.asarray(v) for k, v in prog.initial_values().items()}
    feed["input"], feed["labels"] = IDS.numpy(), LABELS.numpy()
    mlir = tmp_path / "capped.mlir"
    prog.save(str(mlir))
    losses = tools.train(str(mlir), feed, steps=5, learning_rate=0.1).losses

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    expected = []
    with compat.exportable(model, moe_capacity_factor=0.5):
        for _ in range(5):
            optimizer.zero_grad()
            loss = model(IDS, LABELS)
            expected.append(loss.item())
            loss.backward()  # through PyTorch's autograd of the eager het ops' compositions
            optimizer.step()
    assert max(abs(a - b) / abs(b) for a, b in zip(losses, expected)) <= 1e-5


def test_executables_report_the_dropped_choices(tmp_path):
    """The compiled step counts what each forward dispatch drops (not the
    gradient's dispatches again): one step's count equals the eager ops'
    on the same routing; without a capacity nothing is dropped."""
    need_tool("het-compile")
    model = hf_tiny.mixtral()
    routed_logits = []
    hooks = [b.register_forward_hook(lambda m, i, out: routed_logits.append(out[1]))
             for b in blocks(model)]
    with torch.no_grad(), compat.exportable(model, moe_capacity_factor=1.0):
        model(IDS, LABELS)
    for h in hooks:
        h.remove()
    capacity = moe.expert_capacity(64, 2, 4, 1.0)
    expected = sum(int((moe.moe_rows(torch.ops.het.moe_router(l, 2, True)[1], 4, capacity) < 0).sum())
                   for l in routed_logits)
    assert expected > 0
    # het-recompute clones the forward dispatch into the backward: the
    # clone does not count again
    for factor, dropped, args in ((1.0, expected, []), (1.0, expected, ["--recompute", "full"]),
                                  (None, 0, [])):
        prog = het.from_torch(model, (IDS, LABELS), loss="none", input_names=["input", "labels"],
                              moe_capacity_factor=factor)
        feed = {k: np.asarray(v) for k, v in prog.initial_values().items()}
        feed["input"], feed["labels"] = IDS.numpy(), LABELS.numpy()
        mlir = tmp_path / "model.mlir"
        prog.save(str(mlir))
        run = tools.run_compiled(str(mlir), feed, None, steps=1, compile_args=["--lr", "0.1"] + args)
        assert f"moe: {dropped} of 256 expert choices dropped by capacity" in run.stdout, run.stdout


def test_a_capacity_factor_without_experts_is_an_error():
    with pytest.raises(het.HetImportError, match="no mixture-of-experts block"):
        het.from_torch(hf_tiny.llama(), (IDS,), target=LABELS, moe_capacity_factor=1.0)


def test_compiled_and_distributed_runs_match_one_rank(tmp_path):
    compile_tool, run_tool = need_tool("het-compile"), need_tool("het-run")
    model = hf_tiny.mixtral()
    prog = het.from_torch(model, (IDS, LABELS), loss="none", input_names=["input", "labels"])
    mlir = tmp_path / "mixtral.mlir"
    prog.save(str(mlir))
    feed = {k: np.asarray(v) for k, v in prog.initial_values().items()}
    feed["input"], feed["labels"] = IDS.numpy(), LABELS.numpy()
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, **feed)
    evaluated = tools.train(str(mlir), feed, steps=20, learning_rate=0.1).losses
    compiled = tools.train(str(mlir), feed, steps=20, learning_rate=0.1, runner="compile").losses
    assert max(abs(a - b) / abs(b) for a, b in zip(compiled, evaluated)) <= 1e-5

    # layers: 0 embedding, 2-3 the decoder blocks (attention, router,
    # experts), 4 the final norm, 5 the head and losses
    layers = sorted({int(v) for v in re.findall(r"het.layer = (\d+) : i64", mlir.read_text())})
    assert layers[0] == 0 and {2, 3} <= set(layers)
    with open(os.path.join(REPO, "test", "pipeline", "Inputs", "gpt-2x2.plan.json")) as f:
        plan = json.load(f)  # the local two-kind cluster: cpu.onednn and cpu.mlir groups
    plan["global_batch"], plan["micro_batches"] = 4, 2
    onednn, mlir_kind = plan["stages"]
    end = layers[-1] + 1
    # The load-balancing loss is taken over the tokens a rank holds in a
    # micro-batch (Megatron-LM's and DeepSpeed's default), so a plan is
    # compared with one rank that sees the same tokens per micro-batch:
    # two replicas x 2 micro-batches (1 sample each) with one rank x 4.
    plans = {"one": ([dict(onednn, replicas=1, layers=[0, end])], 2),
             "one_by_sample": ([dict(onednn, replicas=1, layers=[0, end])], 4),
             "replicas": ([dict(onednn, replicas=2, layers=[0, end])], 2),
             "stages": ([dict(onednn, replicas=1, layers=[0, 3]),
                         dict(mlir_kind, replicas=1, layers=[3, end])], 2),
             # Expert parallelism: the 4 experts over 2 replicas of a kind,
             # over 4 replicas of two kinds, and unevenly (3 + 1) over one
             # replica of each kind.
             "experts_2": ([{"replica_groups": [{"group": "onednn", "replicas": 2, "experts": 2}],
                             "layers": [0, end]}], 2),
             "experts_4": ([{"replica_groups": [{"group": "onednn", "replicas": 2, "experts": 1},
                                                {"group": "mlir", "replicas": 2, "experts": 1}],
                             "layers": [0, end]}], 1),
             "experts_uneven": ([{"replica_groups": [
                 {"group": "onednn", "replicas": 1, "experts": 3},
                 {"group": "mlir", "replicas": 1, "experts": 1}], "layers": [0, end]}], 2)}
    traces = {}
    for name, (stages, micro_batches) in plans.items():
        path = tmp_path / f"{name}.plan.json"
        path.write_text(json.dumps(dict(plan, stages=stages, micro_batches=micro_batches)))
        exe = tmp_path / name
        subprocess.run([compile_tool, mlir, "--lr", "0.1", "--plan", path, "--micro-batches",
                        str(micro_batches), "-o", exe], check=True, timeout=1200)
        ranks = sum(s.get("replicas") or sum(g["replicas"] for g in s["replica_groups"])
                    for s in stages)
        proc = subprocess.run([run_tool, "-n", str(ranks), "--timeout-ms", "300000", exe, "--steps", "20",
                               "--load", inputs], capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        traces[name] = [float(v) for v in re.findall(r"step \d+ loss (\S+)", proc.stdout)]
        assert len(traces[name]) == 20, proc.stdout
    for name, peer in (("replicas", "one_by_sample"), ("stages", "one"),
                       ("experts_2", "one_by_sample"), ("experts_4", "one_by_sample"),
                       ("experts_uneven", "one_by_sample")):
        assert max(abs(a - b) / abs(b) for a, b in zip(traces[name], traces[peer])) <= 1e-5, name
    # the whole batch at once (het-eval) differs only by the auxiliary
    # term's granularity: 0.02 x a few 1e-2
    assert max(abs(a - b) / abs(b) for a, b in zip(traces["one"], evaluated)) <= 2e-3
