"""Reductions: sum and mean over any axes, amax, var, log_softmax.

var and log_softmax are compositions of het ops (reduce_mean/sum/max and
point-wise bodies), so their gradients come from the parts; log_softmax is
computed as PyTorch does, x - max - log(sum(exp(x - max))).
"""

from .. import mlir
from ..importer import Unsupported, Value
from .pointwise import elementwise


def _axes(x: Value, dims):
    if dims is None or (hasattr(dims, "__len__") and len(dims) == 0):
        return list(range(len(x.shape)))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(int(d) % len(x.shape) for d in dims)


def _reduce(im, node, name, x, axes, keep, hint):
    shape = [1 if d in axes else s for d, s in enumerate(x.shape)] if keep else \
        [s for d, s in enumerate(x.shape) if d not in axes]
    attrs = {"axes": mlir.int_array(axes)}
    if keep:
        attrs["keep_dims"] = None
    return im.op(node, name, [x], attrs, [tuple(shape)], hint=hint)


def register(reg, aten):
    def amax(im, node):
        x = im.tensor(node.args[0])
        axes = _axes(x, node.args[1] if len(node.args) > 1 else node.kwargs.get("dim"))
        keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        return _reduce(im, node, "reduce_max", x, axes, keep, node.name)

    reg([aten.amax.default], amax)

    def var(im, node):
        x = im.tensor(node.args[0])
        axes = _axes(x, node.args[1] if len(node.args) > 1 else node.kwargs.get("dim"))
        correction = node.kwargs.get("correction", 1)
        correction = 1.0 if correction is None else float(correction)
        keep = node.kwargs.get("keepdim", False)
        count = 1
        for d in axes:
            count *= x.shape[d]
        if count - correction <= 0:
            raise Unsupported(f"variance of {count} elements with correction {correction}")
        mean = _reduce(im, node, "reduce_mean", x, axes, True, node.name + "_mean")
        squares = elementwise(im, node, [x, mean], lambda b, v, m: b.mul(b.sub(v, m), b.sub(v, m)),
                              shape=x.shape)
        total = _reduce(im, node, "reduce_sum", squares, axes, keep, node.name + "_sum")
        return elementwise(im, node, [total],
                           lambda b, s: b.div(s, b.const(count - correction)))

    reg([aten.var.correction], var)

    def log_softmax(im, node):
        x = im.tensor(node.args[0])
        axis = node.args[1] % len(x.shape)
        peak = _reduce(im, node, "reduce_max", x, [axis], True, node.name + "_max")
        shifted = elementwise(im, node, [x, peak], lambda b, v, m: b.sub(v, m), shape=x.shape)
        exps = elementwise(im, node, [shifted], lambda b, v: b.exp(v), shape=x.shape)
        total = _reduce(im, node, "reduce_sum", exps, [axis], True, node.name + "_sum")
        return elementwise(im, node, [shifted, total], lambda b, v, s: b.sub(v, b.log(s)),
                           shape=x.shape)

    reg([aten._log_softmax.default], log_softmax)


def register_mean_sum(reg, aten):
    """mean and sum over given axes (or all): het.reduce_mean, het.reduce_sum."""
    def reduce(name):
        def handler(im, node):
            x = im.tensor(node.args[0])
            dims = node.args[1] if len(node.args) > 1 else None
            keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
            if node.kwargs.get("dtype") is not None:
                raise Unsupported("reduction with a dtype")
            if dims is None or len(dims) == 0:
                dims = list(range(len(x.shape)))
            axes = sorted(d % len(x.shape) for d in dims)
            attrs = {"axes": mlir.int_array(axes)}
            if keep:
                attrs["keep_dims"] = None
            return im.op(node, name, [x], attrs, [im.shape_of(node)])

        return handler

    reg([aten.mean.dim, aten.mean.default], reduce("reduce_mean"))
    reg([aten.sum.dim_IntList, aten.sum.default], reduce("reduce_sum"))
