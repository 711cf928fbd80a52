"""Command line: which ATen ops of a model het maps, before importing it.

    python -m het.coverage path/model.py:factory --input-shape 2,16 --input-dtype int64

takes the model arguments of `python -m het.export` (FILE.py:FACTORY or
module:FACTORY, --input-shape, --input-dtype, --input-high, --seed),
captures the model as `het.from_torch` does (het.compat.capture: torch.export
in training mode, core ATen decompositions) and runs the importer's own walk
over the graph, so it agrees with what an import would say. It prints every
op of the decomposed graph with its count and whether het maps it:

    yes     emitted as het ops (or as an identity: views, clones, ...)
    const   computable without data or parameters: evaluated at import time
    skip    never emitted on its own: folded into a neighbour's het op (the
            `t` of a linear layer, the log_softmax of a cross entropy) or not
            needed for the output (BatchNorm's running statistics)
    NO      the importer rejects it (with the reason, and the source line of
            its first occurrence; an op can be rejected in some uses only,
            e.g. dropout with p = 1)

then "N of M op kinds map; K unmapped". Exit status: 0 when everything maps,
1 when something does not (or the model cannot be loaded or captured), 2 on
bad arguments.
"""

import argparse
import operator
import sys
from dataclasses import dataclass, field
from typing import List, Tuple

from .errors import HetError


@dataclass
class OpCoverage:
    """How the importer handles every node of one op kind."""

    op: str  # as the importer names it: "aten::add.Tensor"
    count: int = 0
    mapped: int = 0
    constant: int = 0
    skipped: int = 0
    # (reason, "file:line (function): code") of every rejected node, in graph order
    unmapped: List[Tuple[str, str]] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.unmapped:
            return "NO"
        if self.mapped:
            return "yes"
        return "const" if self.constant else "skip"

    @property
    def maps(self) -> bool:
        return not self.unmapped


def _importer_walk(ep, module):
    """Runs the importer's walk from the output (as from_torch does, without
    the loss); returns {node: "mapped" | "constant" | (reason, source)} for
    every node it visited.

    The importer has no public entry point for this yet, so this is the one
    place that uses its internals (`_Importer`, its `ctx.errors` strings,
    `order`, `values`); a public walk in importer.py that from_torch also
    used would replace it."""
    from . import importer

    importer._setup_handlers()
    user = [s for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    names = ["input"] if len(user) == 1 else [s.arg.name for s in user]
    im = importer._Importer(ep, module, "none", "forward", names)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 20000))
    try:
        im.run()
    finally:
        sys.setrecursionlimit(old_limit)
    node_at = {i: n for n, i in im.order.items()}
    result = {}
    for pos, text in im.ctx.errors:
        node = node_at[pos]
        first = text.split("\n", 1)[0].strip()
        prefix = im._describe(node) + ": "
        reason = first[len(prefix):] if first.startswith(prefix) else first
        result[node] = (reason, importer._user_frame(node))
    for node, value in im.values.items():
        if node.op == "call_function" and node not in result:
            result[node] = "constant" if isinstance(value, importer._Const) else "mapped"
    return result, im._describe


def op_coverage(module, example_inputs) -> List[OpCoverage]:
    """Every op of `module`'s decomposed graph (in order of first occurrence)
    with how het's importer handles it. Raises HetImportError when the model
    cannot be captured."""
    from .compat import capture

    ep = capture(module, example_inputs)
    handled, describe = _importer_walk(ep, module)
    rows = {}
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        how = handled.get(node)
        if node.target is operator.getitem and not isinstance(how, tuple):
            continue  # picks a result of a multi-result op: not an op of its own
        row = rows.setdefault(describe(node), OpCoverage(describe(node)))
        row.count += 1
        if how == "mapped":
            row.mapped += 1
        elif how == "constant":
            row.constant += 1
        elif how is None:
            row.skipped += 1
        else:
            row.unmapped.append(how)
    return list(rows.values())


def summary(rows: List[OpCoverage]) -> str:
    bad = sum(1 for r in rows if not r.maps)
    return f"{len(rows) - bad} of {len(rows)} op kinds map; {bad} unmapped"


def format_report(rows: List[OpCoverage]) -> str:
    width = max([len(r.op) for r in rows] + [2])
    lines = [f"{'count':>6}  {'het':<5}  {'op':<{width}}  notes"]
    for r in rows:
        notes = []
        if r.unmapped:
            notes.append(f"{len(r.unmapped)} of {r.count} rejected")
        for label, n in (("const", r.constant), ("skip", r.skipped)):
            if n and n != r.count:
                notes.append(f"{n} {label}")
        lines.append(f"{r.count:>6}  {r.status:<5}  {r.op:<{width}}  {', '.join(notes)}".rstrip())
        seen = set()
        for reason, where in r.unmapped:
            if reason not in seen:  # each distinct reason, at its first occurrence
                seen.add(reason)
                lines.append(f"{'':>6}  {'':<5}    {reason}\n{'':>6}  {'':<5}      first at {where}")
    lines.append(summary(rows))
    return "\n".join(lines)


def _parser():
    from .export import add_model_arguments

    p = argparse.ArgumentParser(prog="python -m het.coverage", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_arguments(p)
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        import torch
    except ImportError:
        print("het.coverage: error: torch is not installed (see docs/python.md)", file=sys.stderr)
        return 1
    from .export import example_inputs, load_model

    try:
        model = load_model(torch, args)
        inputs = example_inputs(torch, model, args)
        rows = op_coverage(model, tuple(inputs))
    except HetError as e:
        print(f"het.coverage: error: {e}", file=sys.stderr)
        return 1
    shapes = ", ".join(f"{list(x.shape)} {str(x.dtype).replace('torch.', '')}" for x in inputs)
    print(f"het.coverage: {args.model} on {shapes}")
    print(format_report(rows))
    return 0 if all(r.maps for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
