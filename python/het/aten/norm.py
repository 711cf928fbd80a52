"""Normalisation: BatchNorm (training mode, without running statistics,
eval mode) and LayerNorm map op for op (`register_batch_and_layer_norm`);
RMS normalisation is recognised in its decomposed form (below).

After core decompositions, Llama's `LlamaRMSNorm`, `torch.nn.RMSNorm`,
`F.rms_norm` and the hand-written `x * torch.rsqrt(x.pow(2).mean(-1,
keepdim=True) + eps) * w` all reach the importer as the same chain:

    r = rsqrt(mean(pow(x, 2), [-1], keepdim=True) + eps)    # or mul(x, x)
    y = mul(x, r)                 # either operand order
    y = _to_copy(y)               # optional; must not change the dtype
    y = mul(w, y)                 # optional, either order; w is [D]

Imported op by op this is five or six het ops (point-wise bodies, a
reduce_mean, products), each with its own backward and saved tensors. The
importer instead emits one `het.rms_norm` (with a constant `ones(D)` scale
when there is no `w`), whose backward is the fused `het.rms_norm_grad`.

The chain is replaced only when each of its intermediates has exactly one
user, the next op of the chain: anything else that reads `pow`, the mean,
`rsqrt` or `x * r` still needs that value, and then the chain is imported op
by op as before. `x` itself (e.g. the residual stream) may have any users.
Llama casts `x` to float32 first (`x.to(torch.float32)`); that copy is `x`
here, and imports as the identity when it changes nothing.
"""

from dataclasses import dataclass
from typing import Optional

from .. import mlir
from ..importer import Const, Unsupported

# het.rms_norm's default epsilon (include/het/Dialect/Het/IR/HetComputeOps.td)
DEFAULT_EPSILON = 1e-6


@dataclass
class RMSNormMatch:
    x: object  # fx node that is normalised
    weight: Optional[object]  # fx node of the [D] scale, or None
    epsilon: float


def _is(node, *targets) -> bool:
    return hasattr(node, "op") and node.op == "call_function" and node.target in targets


def _only_user_is(node, user) -> bool:
    return list(node.users) == [user]


def _meta(node):
    return node.meta.get("val") if hasattr(node, "meta") else None


def _squares_of(node, aten):
    """x when `node` is pow(x, 2) or mul(x, x); else None."""
    if _is(node, aten.pow.Tensor_Scalar) and not hasattr(node.args[1], "op") and \
            float(node.args[1]) == 2.0:
        return node.args[0]
    if _is(node, aten.mul.Tensor) and node.args[0] is node.args[1]:
        return node.args[0]
    return None


def _last_axis_mean(node, aten) -> bool:
    """`node` is mean(t, [-1], keepdim=True) with no dtype."""
    if not _is(node, aten.mean.dim) or _meta(node) is None:
        return False
    rank = len(_meta(node).shape)
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
    return (keep and node.kwargs.get("dtype") is None and dims is not None and len(dims) == 1
            and rank >= 1 and dims[0] % rank == rank - 1)


def _normalized(node, aten):
    """(x, eps) when `node` is x * rsqrt(mean(x^2, -1, keepdim) + eps)."""
    if not _is(node, aten.mul.Tensor):
        return None
    for x, r in ((node.args[0], node.args[1]), (node.args[1], node.args[0])):
        if not (_is(r, aten.rsqrt.default) and _only_user_is(r, node)):
            continue
        add = r.args[0]
        if not (_is(add, aten.add.Tensor, aten.add.Scalar) and _only_user_is(add, r)):
            continue
        if node.kwargs.get("alpha", 1) != 1 or add.kwargs.get("alpha", 1) != 1:
            continue
        mean, eps = add.args[0], add.args[1]
        if hasattr(eps, "op"):
            mean, eps = eps, mean
        if hasattr(eps, "op") or not isinstance(eps, (int, float)) or not eps > 0:
            continue  # het.rms_norm needs a positive epsilon
        if not (_last_axis_mean(mean, aten) and _only_user_is(mean, add)):
            continue
        squares = mean.args[0]
        if _only_user_is(squares, mean) and _squares_of(squares, aten) is x:
            return x, float(eps)
    return None


def _same_dtype_copy(node, aten) -> bool:
    """`node` is a `_to_copy` that keeps its input's dtype."""
    if not _is(node, aten._to_copy.default) or not hasattr(node.args[0], "op"):
        return False
    src, out = _meta(node.args[0]), _meta(node)
    return src is not None and out is not None and src.dtype == out.dtype


def match_rms_norm(node, aten) -> Optional[RMSNormMatch]:
    """The RMS norm that ends at `node` (a mul), or None."""
    if _is(node, aten.mul.Tensor):
        for inner, weight in ((node.args[0], node.args[1]), (node.args[1], node.args[0])):
            if not (hasattr(inner, "op") and hasattr(weight, "op")):
                continue
            core = inner
            if _same_dtype_copy(core, aten) and _only_user_is(core, node):
                core = core.args[0]
            if not _only_user_is(core, inner if core is not inner else node):
                continue
            found = _normalized(core, aten)
            if found is None:
                continue
            x, eps = found
            xv, wv, yv = _meta(x), _meta(weight), _meta(node)
            if xv is None or wv is None or yv is None:
                continue
            if tuple(wv.shape) == tuple(xv.shape[-1:]) and wv.dtype == xv.dtype and \
                    tuple(yv.shape) == tuple(xv.shape):
                return RMSNormMatch(x, weight, eps)
    found = _normalized(node, aten)
    if found is not None:
        return RMSNormMatch(found[0], None, found[1])
    return None


def rms_norm(im, node, match: RMSNormMatch):
    """Emits het.rms_norm for `match`; the normalised output."""
    import torch

    x = im.tensor(match.x)
    d = x.shape[-1]
    if match.weight is not None:
        w = im.tensor(match.weight, like=x)
    else:
        w = im.const_value(Const(torch.ones(d)), like=x)
    attrs = {}
    if match.epsilon != DEFAULT_EPSILON:
        attrs["epsilon"] = mlir.float_attr(match.epsilon)
    y, _rstd = im.op(node, "rms_norm", [x, w], attrs, [x.shape, x.shape[:-1]])
    return y


def register(reg, aten, mul):
    """`aten.mul.Tensor` forms an RMS norm where one ends, else is `mul`."""

    def mul_or_rms_norm(im, node):
        match = match_rms_norm(node, aten)
        if match is not None and im.elem_of(match.x).startswith(("f", "b")):
            return rms_norm(im, node, match)
        return mul(im, node)

    reg([aten.mul.Tensor], mul_or_rms_norm)


def register_batch_and_layer_norm(reg, aten):
    """BatchNorm in training mode (with or without running statistics) and
    in eval mode, and LayerNorm over the last dimension."""
    import torch

    def ov(packet, name):
        return getattr(packet, name, None)

    def batch_norm(im, node):
        x_arg, w_arg, b_arg, rm, rv, training, momentum, eps = node.args[:8]
        x = im.tensor(x_arg)
        c = x.shape[1]
        ones = Const(torch.ones(c))
        zeros = Const(torch.zeros(c))
        w = im.tensor(w_arg, like=x) if w_arg is not None else im.const_value(ones, like=x)
        b = im.tensor(b_arg, like=x) if b_arg is not None else im.const_value(zeros, like=x)
        attrs = {} if abs(eps - 1e-5) < 1e-20 else {"epsilon": mlir.float_attr(eps)}
        if not training:
            raise Unsupported("batch norm in eval mode inside a training graph")
        y, mean, inv = im.op(node, "batch_norm", [x, w, b], attrs,
                             [x.shape, (c,), (c,)], hint=node.name)
        # The running statistics, when something reads them (the buffer
        # updates torch.export lists as the graph's mutations).
        used = {u.args[1] for u in node.users
                if u.op == "call_function" and len(u.args) > 1 and isinstance(u.args[1], int)}
        if not used & {3, 4}:
            return (y, None, None, None, None)
        if momentum is None:
            raise Unsupported("batch norm with momentum=None (a cumulative average) keeps no "
                              "exponential running statistics het can update; set a momentum")
        stats_attrs = dict(attrs)
        if abs(momentum - 0.1) > 1e-20:
            stats_attrs["momentum"] = mlir.float_attr(momentum)
        rm_v, rv_v = im.tensor(rm, like=x), im.tensor(rv, like=x)
        new_mean, new_var = im.op(node, "batch_norm_running_stats", [rm_v, rv_v, mean, inv, x],
                                  stats_attrs, [(c,), (c,)], hint=node.name + "_running")
        return (y, None, None, new_mean, new_var)

    reg([aten._native_batch_norm_legit_functional.default], batch_norm)

    def batch_norm_no_stats(im, node):
        # _native_batch_norm_legit(x, w, b, training, momentum, eps): affine, no running stats
        x_arg, w_arg, b_arg, training, momentum, eps = node.args[:6]
        x = im.tensor(x_arg)
        c = x.shape[1]
        w = im.tensor(w_arg, like=x) if w_arg is not None else im.const_value(Const(torch.ones(c)), like=x)
        b = im.tensor(b_arg, like=x) if b_arg is not None else im.const_value(Const(torch.zeros(c)), like=x)
        if not training:
            raise Unsupported("batch norm without statistics in eval mode")
        attrs = {} if abs(eps - 1e-5) < 1e-20 else {"epsilon": mlir.float_attr(eps)}
        y, _m, _s = im.op(node, "batch_norm", [x, w, b], attrs, [x.shape, (c,), (c,)])
        return (y, None, None)

    reg([ov(aten._native_batch_norm_legit, "no_stats")], batch_norm_no_stats)

    def batch_norm_inference(im, node):
        x_arg, w_arg, b_arg, rm, rv, _momentum, eps = node.args[:7]
        x = im.tensor(x_arg)
        ops = [x, im.tensor(w_arg, like=x), im.tensor(b_arg, like=x),
               im.tensor(rm, like=x), im.tensor(rv, like=x)]
        attrs = {} if abs(eps - 1e-5) < 1e-20 else {"epsilon": mlir.float_attr(eps)}
        y = im.op(node, "batch_norm_inference", ops, attrs, [x.shape])
        return (y, None, None)

    reg([aten._native_batch_norm_legit_no_training.default], batch_norm_inference)

    def layer_norm(im, node):
        x_arg, normalized, w_arg, b_arg, eps = node.args[:5]
        x = im.tensor(x_arg)
        if len(normalized) != 1:
            raise Unsupported("layer norm over more than the last dimension")
        d = x.shape[-1]
        w = im.tensor(w_arg, like=x) if w_arg is not None else im.const_value(Const(torch.ones(d)), like=x)
        b = im.tensor(b_arg, like=x) if b_arg is not None else im.const_value(Const(torch.zeros(d)), like=x)
        attrs = {} if abs(eps - 1e-5) < 1e-20 else {"epsilon": mlir.float_attr(eps)}
        y, _m, _r = im.op(node, "layer_norm", [x, w, b], attrs, [x.shape, x.shape[:-1], x.shape[:-1]])
        return (y, None, None)

    reg([aten.native_layer_norm.default], layer_norm)
