"""Tool discovery, the het-opt / het-plan / het-compile wrappers, and the plotting helpers."""

import json
import os
import stat

import pytest

import het
from het import plot
from conftest import REPO, need_tool


def test_het_tools_dir_comes_first(tmp_path, monkeypatch):
    fake = tmp_path / "het-opt"
    fake.write_text("#!/bin/sh\necho fake\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("HET_TOOLS_DIR", str(tmp_path))
    assert het.find_tool("het-opt") == str(fake)


def test_missing_tool_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("HET_TOOLS_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(het.HetToolError, match=r"het-nonexistent not found in .*build/bin or on PATH"):
        het.find_tool("het-nonexistent")


def test_installed_prefix_is_searched_after_het_tools_dir(tmp_path, monkeypatch):
    # An installed tree (cmake --install --prefix P): HET_PREFIX=P finds P/bin,
    # and HET_TOOLS_DIR still wins over it.
    prefix_bin = tmp_path / "prefix" / "bin"
    prefix_bin.mkdir(parents=True)
    tools_dir = tmp_path / "tools"
    tools_dir.mkdir()
    for d in (prefix_bin, tools_dir):
        fake = d / "het-fake-tool"
        fake.write_text("#!/bin/sh\n")
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.delenv("HET_TOOLS_DIR", raising=False)
    monkeypatch.setenv("HET_PREFIX", str(tmp_path / "prefix"))
    assert het.find_tool("het-fake-tool") == str(prefix_bin / "het-fake-tool")
    monkeypatch.setenv("HET_TOOLS_DIR", str(tools_dir))
    assert het.find_tool("het-fake-tool") == str(tools_dir / "het-fake-tool")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(het.HetToolError, match=r"set HET_PREFIX to its prefix"):
        het.find_tool("het-nonexistent")


def test_het_opt_wrapper_reports_the_verifier_message():
    need_tool("het-opt")
    bad = ("func.func @f(%x: tensor<4x8xf32>, %w: tensor<3x5xf32>) -> tensor<4x3xf32> {\n"
           "  %y = het.linear %x, %w : tensor<4x8xf32>, tensor<3x5xf32> -> tensor<4x3xf32>\n"
           "  return %y : tensor<4x3xf32>\n}\n")
    with pytest.raises(het.HetToolError) as info:
        het.het_opt(bad)
    assert info.value.returncode != 0
    assert "het.linear" in str(info.value)


def test_het_opt_wrapper_round_trips_an_example():
    need_tool("het-opt")
    out = het.het_opt(os.path.join(REPO, "examples", "models", "mlp.mlir"))
    assert "het.linear" in out and "het.cross_entropy" in out


def test_plan_wrapper_loads_json_and_draws_it(tmp_path):
    # Skipped ONLY when het-plan has not been built (issue 6 adds it).
    if not het.has_tool("het-plan"):
        pytest.skip("het-plan is not built yet (issue 6)")
    cluster = os.path.join(REPO, "examples", "clusters", "mixed-node.json")
    plan = het.plan(os.path.join(REPO, "examples", "models", "mlp.mlir"), cluster)
    assert isinstance(plan, dict) and plan["plans"]
    path = plot.plan_gantt(plan, str(tmp_path / "plan.png"))
    assert os.path.getsize(path) > 1000


def test_plan_gantt_from_a_het_plan_json(tmp_path):
    # A plan printed by `het-plan --json` (examples/models/mlp.mlir on
    # examples/clusters/mixed-node.json), kept as test data.
    with open(os.path.join(os.path.dirname(__file__), "data", "het_plan_mlp_mixed_node.json")) as f:
        plan = json.load(f)
    events = plot.plan_events(plan)
    stages = plan["plans"][0]["stages"]
    lanes = list(dict.fromkeys(e["lane"] for e in events))
    assert len(lanes) == len(stages)
    kinds = {e["kind"] for e in events}
    assert {"forward", "backward", "allreduce"} <= kinds
    path = plot.plan_gantt(plan, str(tmp_path / "plan.svg"))
    assert "time (us)" in open(path).read() or "<svg" in open(path).read()


def test_loss_curve_writes_an_image(tmp_path):
    path = plot.loss_curve({"het": [2.3, 2.1, 1.9], "pytorch": [2.3, 2.1, 1.9]}, str(tmp_path / "loss.png"))
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_plan_gantt_from_stage_times(tmp_path):
    plan = {"micro_batches": 4, "stages": [
        {"group": "a100", "layers": [0, 14], "forward": 1.0, "backward": 2.0},
        {"group": "mi250", "layers": [14, 24], "forward": 1.2, "backward": 2.4}]}
    events = plot.plan_events(plan)
    assert len(events) == 16
    # 1F1B: the last stage's first forward waits for the first stage's
    by = {(e["lane"], e["kind"], e["label"]): e for e in events}
    assert by[("mi250 [14, 24)", "forward", "0")]["start"] == pytest.approx(1.0)
    # no lane runs two things at once
    for lane in {e["lane"] for e in events}:
        spans = sorted((e["start"], e["end"]) for e in events if e["lane"] == lane)
        assert all(a[1] <= b[0] + 1e-12 for a, b in zip(spans, spans[1:]))
    path = plot.plan_gantt(plan, str(tmp_path / "plan.svg"))
    assert "<svg" in open(path).read()


def test_plan_gantt_from_events(tmp_path):
    events = [{"lane": "s0", "start": 0, "end": 1, "kind": "forward"},
              {"lane": "s0", "start": 1, "end": 1.5, "kind": "allreduce"},
              {"lane": "s1", "start": 1, "end": 2, "kind": "backward"}]
    path = plot.plan_gantt({"timeline": events}, str(tmp_path / "plan.png"))
    assert os.path.getsize(path) > 1000


@pytest.mark.parametrize("bad, message", [
    ({}, "needs `timeline`"),
    ({"stages": [{"group": "a"}]}, "no numeric forward/backward time"),
    ([{"lane": "s", "start": 2, "end": 1}], "ends before it starts"),
    ([], "no events"),
])
def test_plan_gantt_rejects_bad_plans(tmp_path, bad, message):
    with pytest.raises(het.HetError, match=message):
        plot.plan_gantt(bad, str(tmp_path / "x.png"))


def test_loss_curve_rejects_empty(tmp_path):
    with pytest.raises(het.HetError, match="no loss values"):
        plot.loss_curve([], str(tmp_path / "x.png"))


def test_evaluate_names_the_missing_arguments():
    need_tool("het-eval")
    import numpy as np

    with pytest.raises(het.HetToolError, match="needs arguments that were not given: target"):
        het.evaluate(_named_mlp(), {"input": np.zeros((32, 64), np.float32)})


def _named_mlp():
    import models

    model, x, y = models.make("mlp")
    return het.from_torch(model, x, target=y)


@pytest.fixture(scope="module")
def mlp_and_feed():
    import models

    model, x, y = models.make("mlp")
    prog = het.from_torch(model, x, target=y)
    return model, prog, {**prog.initial_values(), "input": x.numpy(), "target": y.numpy()}


@pytest.mark.parametrize("options", [dict(learning_rate=0.1), dict(learning_rate=0.05, momentum=0.9),
                                     dict(optimizer="adam", learning_rate=0.01),
                                     dict(optimizer="adam", learning_rate=0.01, weight_decay=0.01,
                                          decoupled=True)],
                         ids=["sgd", "momentum", "adam", "adamw"])
def test_compiled_runner_trains_like_the_evaluator(mlp_and_feed, options):
    import copy

    import numpy as np

    need_tool("het-eval")
    need_tool("het-compile")
    model, prog, feed = mlp_and_feed
    steps = 10
    ref = het.train(prog, feed, steps=steps, **options)
    run = het.train(prog, feed, steps=steps, runner="compile", **options)
    assert len(run.losses) == steps and ref.losses[-1] < 0.95 * ref.losses[0]
    errs = [abs(a - b) / abs(a) for a, b in zip(ref.losses, run.losses)]
    print(f"compiled vs het-eval, MLP {options}: max relative loss difference {max(errs):.3g}")
    assert max(errs) <= 1e-5
    # the same arrays come back (trained parameters, optimizer state, last
    # loss), and they load into the module the same way
    assert sorted(run) == sorted(ref)
    for key in ref:
        np.testing.assert_allclose(run[key], ref[key], rtol=1e-5, atol=1e-6, err_msg=key)
    a, b = copy.deepcopy(model), copy.deepcopy(model)
    het.to_torch(ref, a)
    het.to_torch(run, b)
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
        assert not np.array_equal(p.detach().numpy(), feed[name]), f"{name} was not trained"


def test_compiled_runner_reports_bad_input(mlp_and_feed, tmp_path, monkeypatch):
    need_tool("het-compile")
    _, prog, feed = mlp_and_feed
    step = het.autodiff(prog)
    with pytest.raises(het.HetToolError, match=r"no function @nope_train_step in the program "
                                               r"\(functions: @forward, @forward_train_step\)"):
        het.run_compiled(step, feed, "nope_train_step", steps=2)
    with pytest.raises(het.HetToolError, match="@forward is not one"):
        het.run_compiled(step, feed, "forward", steps=2)
    # the executable would start from random values; like het-eval, refuse
    partial = {k: v for k, v in feed.items() if k != "target"}
    with pytest.raises(het.HetToolError, match="the step needs arguments the file lacks: target"):
        het.run_compiled(step, partial, "forward_train_step", steps=2)
    with pytest.raises(het.HetToolError, match=r"(?s)het-compile failed .*unknown kernel library 'bogus'"):
        het.run_compiled(step, feed, "forward_train_step", steps=2, compile_args=["--library=bogus"])
    with pytest.raises(ValueError, match="f32 only"):
        het.train(prog, feed, steps=2, runner="compile", precision="f64")
    monkeypatch.setattr(het.tools, "_search_dirs", lambda: [str(tmp_path)])
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(het.HetToolError, match="het-compile not found in"):
        het.run_compiled(step, feed, "forward_train_step", steps=2)
