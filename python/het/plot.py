"""Plots: a pipeline plan's Gantt chart and training loss curves.

matplotlib runs with the Agg backend (no display needed); each function
writes an image file (format from its extension: .png, .svg, .pdf) and
returns its path.
"""

from typing import Dict, List, Mapping, Sequence, Union

from .errors import HetError

_COLORS = {
    "forward": "#4C72B0",
    "backward": "#DD8452",
    "comm": "#55A868",
    "allreduce": "#8172B3",
    "optimizer": "#937860",
    "bubble": "#DDDDDD",
}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _events_from_stages(stages: Sequence[Mapping], micro_batches: int) -> List[dict]:
    """A 1F1B schedule from per-stage forward/backward times of one micro-batch.

    Each stage needs `forward` and `backward` times (or `forward_ms` /
    `backward_ms`); its lane is `name`, else `group`/`device_group`, else
    `stage <i>`. Stage i's k-th forward starts when stage i-1's k-th forward
    has finished and the stage is free, and backward passes flow back the
    same way (communication time is not modelled here).
    """
    n = len(stages)
    fwd, bwd, lanes = [], [], []
    for i, s in enumerate(stages):
        try:
            fwd.append(float(s.get("forward", s.get("forward_ms"))))
            bwd.append(float(s.get("backward", s.get("backward_ms"))))
        except (TypeError, ValueError):
            raise HetError(f"stage {i} has no numeric forward/backward time: {dict(s)}")
        layers = s.get("layers") or (s.get("layer_begin"), s.get("layer_end"))
        lane = str(s.get("name") or s.get("group") or s.get("device_group") or f"stage {i}")
        if layers and None not in tuple(layers):
            lane += f" [{layers[0]}, {layers[1]})"
        lanes.append(lane)
    m = int(micro_batches)
    # 1F1B order per stage: warm-up forwards, then alternate, then cool-down backwards.
    orders = []
    for i in range(n):
        warm = min(n - i, m)
        order = [("F", k) for k in range(warm)]
        f, b = warm, 0
        while b < m:
            order.append(("B", b))
            b += 1
            if f < m:
                order.append(("F", f))
                f += 1
        orders.append(order)
    done = {}
    free = [0.0] * n
    pending = [list(o) for o in orders]
    events = []
    progress = True
    while progress and any(pending):
        progress = False
        for i in range(n):
            while pending[i]:
                kind, k = pending[i][0]
                if kind == "F":
                    dep = done.get(("F", i - 1, k)) if i > 0 else 0.0
                else:
                    dep = done.get(("B", i + 1, k)) if i < n - 1 else done.get(("F", i, k))
                if dep is None:
                    break
                start = max(free[i], dep)
                end = start + (fwd[i] if kind == "F" else bwd[i])
                done[(kind, i, k)] = end
                free[i] = end
                events.append({"lane": lanes[i], "start": start, "end": end,
                               "kind": "forward" if kind == "F" else "backward", "label": str(k)})
                pending[i].pop(0)
                progress = True
    if any(pending):
        raise HetError("could not schedule the stages (inconsistent stage list)")
    return events


def _events_from_het_plan(plan: Mapping) -> List[dict]:
    """A `het-plan/1` plan (het-plan --json): 1F1B from the predicted
    per-micro-batch forward/backward times of each stage, then each stage's
    gradient all-reduce and optimizer update. Times in seconds."""
    predicted = plan.get("predicted") or {}
    timing = predicted.get("stages") or []
    stages = plan.get("stages") or []
    if len(timing) != len(stages) or not stages:
        raise HetError("a het-plan plan needs `stages` and `predicted.stages` of the same length")
    merged = []
    for s, t in zip(stages, timing):
        layers = s.get("layers")
        name = f"{s.get('name', '')} {s.get('group', '')}".strip()
        if s.get("replicas", 1) != 1:
            name += f" x{s['replicas']}"
        merged.append({"name": name, "layers": layers, "forward": t.get("fwd_s"), "backward": t.get("bwd_s")})
    events = _events_from_stages(merged, plan.get("micro_batches", 1))
    for i, (stage, t) in enumerate(zip(merged, timing)):
        lane = events[[e["lane"].startswith(stage["name"]) for e in events].index(True)]["lane"]
        end = max(e["end"] for e in events if e["lane"] == lane)
        for kind, key in (("allreduce", "sync_s"), ("optimizer", "update_s")):
            length = float(t.get(key) or 0.0)
            if length > 0:
                events.append({"lane": lane, "start": end, "end": end + length, "kind": kind, "label": ""})
                end += length
    return events


def plan_events(plan: Union[Mapping, Sequence[Mapping]]) -> List[dict]:
    """Events {lane, start, end, kind, label} of a plan.

    Accepts het-plan's JSON (`{"plans": [...]}` draws the best plan, or one
    `het-plan/1` plan), a list of events, a plan dict holding them under
    `timeline`/`events`/`schedule`, or a plan dict whose `stages` carry
    per-micro-batch `forward`/`backward` times (with `micro_batches`).
    """
    if isinstance(plan, Mapping):
        if isinstance(plan.get("plans"), list):
            if not plan["plans"]:
                raise HetError("het-plan returned no plans")
            return plan_events(plan["plans"][0])
        if str(plan.get("format", "")).startswith("het-plan"):
            return _events_from_het_plan(plan)
        for key in ("timeline", "events", "schedule"):
            if isinstance(plan.get(key), list):
                return plan_events(plan[key])
        stages = plan.get("stages")
        if isinstance(stages, list) and stages:
            return _events_from_stages(stages, plan.get("micro_batches", plan.get("microBatches", 1)))
        raise HetError("a plan needs `timeline`/`events` or `stages` with forward/backward times")
    events = []
    for i, e in enumerate(plan):
        try:
            start, end = float(e["start"]), float(e["end"])
            lane = str(e.get("lane", e.get("stage", e.get("device", "?"))))
        except (KeyError, TypeError, ValueError):
            raise HetError(f"event {i} needs numeric start and end: {e!r}")
        if end < start:
            raise HetError(f"event {i} ends before it starts: {e!r}")
        events.append({"lane": lane, "start": start, "end": end, "kind": str(e.get("kind", "forward")),
                       "label": str(e.get("label", ""))})
    if not events:
        raise HetError("the plan has no events to draw")
    return events


def plan_gantt(plan, path: str, title: str = "pipeline schedule (one iteration)", unit: str = None) -> str:
    """Draws one iteration of a plan as a Gantt chart (one row per stage).

    `unit` labels the time axis; by default het-plan's seconds are shown in
    s, ms or us, whichever reads best, and other plans' times are unlabelled."""
    events = plan_events(plan)
    if unit is None:
        is_het_plan = isinstance(plan, Mapping) and ("plans" in plan or
                                                     str(plan.get("format", "")).startswith("het-plan"))
        unit = "s" if is_het_plan else "time units"
        if is_het_plan:
            span = max(e["end"] for e in events)
            scale, unit = (1e6, "us") if span < 1e-3 else (1e3, "ms") if span < 1 else (1.0, "s")
            events = [dict(e, start=e["start"] * scale, end=e["end"] * scale) for e in events]
    plt = _pyplot()
    lanes = list(dict.fromkeys(e["lane"] for e in events))
    fig, ax = plt.subplots(figsize=(10, 0.6 * len(lanes) + 1.5))
    for e in events:
        row = lanes.index(e["lane"])
        ax.barh(row, e["end"] - e["start"], left=e["start"], height=0.6,
                color=_COLORS.get(e["kind"], "#C44E52"), edgecolor="black", linewidth=0.4)
        if e["label"] and e["end"] - e["start"] > 0:
            ax.text((e["start"] + e["end"]) / 2, row, e["label"], ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes)
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    ax.set_title(title)
    kinds = list(dict.fromkeys(e["kind"] for e in events))
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=_COLORS.get(k, "#C44E52"), label=k) for k in kinds],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def loss_curve(traces: Union[Sequence[float], Dict[str, Sequence[float]]], path: str,
               title: str = "training loss") -> str:
    """Plots one or several loss traces ({label: losses}) against the step."""
    if not isinstance(traces, Mapping):
        traces = {"loss": traces}
    if not traces or not any(len(v) for v in traces.values()):
        raise HetError("no loss values to plot")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, values in traces.items():
        values = [float(v) for v in values]
        ax.plot(range(len(values)), values, marker="o", markersize=3, label=label)
    return _finish(plt, fig, ax, path, title, "step", "loss")


def _finish(plt, fig, ax, path, title, xlabel, ylabel):
    """Labels, grid and legend; writes the figure to `path`."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def curves(series: Mapping[str, Sequence[Sequence[float]]], path: str, title: str = "loss",
           xlabel: str = "step", ylabel: str = "loss", dashed: Sequence[str] = ()) -> str:
    """Plots curves given as {label: (xs, ys)}: training losses at every step
    beside validation losses every few steps, on one pair of axes; the
    labels in `dashed` are drawn dashed (a peer over a curve it matches)."""
    series = {k: v for k, v in series.items() if len(v[0])}
    if not series:
        raise HetError("no values to plot")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, (xs, ys) in series.items():
        sparse = len(xs) < 30
        ax.plot([float(x) for x in xs], [float(y) for y in ys], label=label,
                marker="o" if sparse else None, markersize=4, linewidth=1.5 if sparse else 1.0,
                linestyle="--" if label in dashed else "-")
    return _finish(plt, fig, ax, path, title, xlabel, ylabel)
