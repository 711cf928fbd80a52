"""Concatenation and slicing: cat, slice, select, split, repeat.

PyTorch's slice takes any start/end (negative, past the end) and a step;
het.slice takes normalized ranges (0 <= start <= end <= size, step >= 1),
so the handlers clamp as PyTorch does. A slice that keeps everything is
the tensor itself.
"""

from .. import mlir
from ..importer import Unsupported, Value


def _normalized_range(start, end, size):
    start = 0 if start is None else int(start)
    end = size if end is None else int(end)
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end


def slice_value(im, node, x: Value, axis: int, start: int, end: int, step: int = 1, hint=None):
    """x[..., start:end:step, ...] along `axis` (already normalized)."""
    axis %= len(x.shape)
    if start == 0 and end == x.shape[axis] and step == 1:
        return x
    shape = list(x.shape)
    shape[axis] = (end - start + step - 1) // step
    attrs = {"axes": mlir.int_array([axis]), "starts": mlir.int_array([start]),
             "ends": mlir.int_array([end]), "steps": mlir.int_array([step])}
    return im.op(node, "slice", [x], attrs, [tuple(shape)], hint=hint)


def register(reg, aten):
    def cat(im, node):
        tensors = list(node.args[0])
        axis = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        like = next((im.get(t) for t in tensors if hasattr(t, "op") and isinstance(im.get(t), Value)),
                    None)
        values = [im.tensor(t, like=like) for t in tensors]
        values = [v for v in values if 0 not in v.shape or len(v.shape) != 1]  # torch drops [0]
        if len(values) == 1:
            return values[0]
        if any(not v.elem.startswith(("f", "b")) for v in values):
            raise Unsupported("concatenation of integer tensors")
        axis %= len(values[0].shape)
        return im.op(node, "concat", values, {"axis": f"{axis} : i64"}, [im.shape_of(node)],
                     type_style="functional")

    reg([aten.cat.default], cat)

    def slice_(im, node):
        x = im.tensor(node.args[0])
        axis = node.args[1] if len(node.args) > 1 else 0
        axis %= len(x.shape)
        start = node.args[2] if len(node.args) > 2 else None
        end = node.args[3] if len(node.args) > 3 else None
        step = int(node.args[4]) if len(node.args) > 4 else 1
        if any(hasattr(a, "op") for a in (start, end)):
            raise Unsupported("slice bounds computed at run time")
        if step < 1:
            raise Unsupported(f"slice step {step}")
        start, end = _normalized_range(start, end, x.shape[axis])
        if not x.elem.startswith(("f", "b")):
            raise Unsupported(f"slicing a computed {x.elem} tensor")
        return slice_value(im, node, x, axis, start, end, step)

    reg([aten.slice.Tensor], slice_)

    def select(im, node):
        x = im.tensor(node.args[0])
        axis = node.args[1] % len(x.shape)
        index = node.args[2]
        if hasattr(index, "op"):
            raise Unsupported("select with an index computed at run time")
        index = int(index) + (x.shape[axis] if int(index) < 0 else 0)
        if not x.elem.startswith(("f", "b")):
            raise Unsupported(f"selecting from a computed {x.elem} tensor")
        one = slice_value(im, node, x, axis, index, index + 1, hint=node.name + "_row")
        return im.reshape(node, one, im.shape_of(node))

    reg([aten.select.int], select)

    def split(im, node):
        """Generic split/split_with_sizes: one slice per piece."""
        x = im.tensor(node.args[0])
        axis = (node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)) % len(x.shape)
        pieces, begin = [], 0
        for i, val in enumerate(node.meta["val"]):
            size = int(val.shape[axis])
            pieces.append(slice_value(im, node, x, axis, begin, begin + size,
                                      hint=f"{node.name}_{i}"))
            begin += size
        return tuple(pieces)

    def repeat(im, node):
        x = im.tensor(node.args[0])
        repeats = [int(r) for r in node.args[1]]
        # leading new dimensions, then per dimension d: [.., 1, s, ..] ->
        # broadcast [.., r, s, ..] -> reshape [.., r*s, ..]
        shape = [1] * (len(repeats) - len(x.shape)) + list(x.shape)
        x = im.reshape(node, x, shape)
        for d, r in enumerate(repeats):
            if r == 1:
                continue
            before = list(x.shape)
            lifted = before[:d] + [1] + before[d:]
            x = im.reshape(node, x, lifted)
            stretched = before[:d] + [r] + before[d:]
            x = im.op(node, "broadcast_to", [x], {}, [tuple(stretched)])
            x = im.reshape(node, x, before[:d] + [r * before[d]] + before[d + 1:])
        return x

    reg([aten.repeat.default], repeat)
    return {"split": split}
