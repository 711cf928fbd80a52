"""Softmax with the attention patterns folded in: a causal mask (masked_fill
with a `tril` buffer, or scaled_dot_product_attention's additive 0/-inf
mask) becomes `{causal}`, a constant factor in front becomes `{scale}`, and
scaled_dot_product_attention's guard for fully masked rows is dropped (a
causal or unmasked softmax has none).
"""

from .. import mlir
from . import calls
from ..importer import Const, Unsupported


def register(reg, aten, where_elementwise):
    """`where_elementwise`: the handler of any other `where`."""
    import torch

    def causal_mask_kind(mask, q, k):
        """'keep' if `mask` (bool, True = keep) is the causal pattern, else None."""
        torch_ = torch
        m = mask.to(torch_.bool)
        while m.dim() > 2 and m.shape[0] == 1:
            m = m[0]
        if m.dim() != 2 or tuple(m.shape) != (q, k):
            return False
        i = torch_.arange(q).unsqueeze(1)
        j = torch_.arange(k).unsqueeze(0)
        keep = j <= i + (k - q)
        return bool(torch_.equal(m, keep))

    def softmax(im, node):
        src, dim = node.args[0], node.args[1]
        shape = im.shape_of(node)
        rank = len(shape)
        attrs = {}
        causal = False
        # masked_fill(mask == 0, -inf) lowers to where(cond, -inf, x)
        if hasattr(src, "op") and src.target is aten.where.self:
            cond, fill, other = src.args
            c_cond = im.get(cond) if hasattr(cond, "op") else None
            c_fill = im.get(fill) if hasattr(fill, "op") else Const(fill)
            if isinstance(c_cond, Const) and isinstance(c_fill, Const) and \
                    float(c_fill.value) == float("-inf") and \
                    causal_mask_kind(~c_cond.value.to(torch.bool), shape[-2], shape[-1]):
                causal, src = True, other
        # an additive mask of 0 / -inf (scaled_dot_product_attention's form)
        elif hasattr(src, "op") and src.target is aten.add.Tensor and hasattr(src.args[1], "op"):
            m = im.get(src.args[1])
            if isinstance(m, Const) and isinstance(m.value, torch.Tensor) and \
                    causal_mask_kind(m.value == 0, shape[-2], shape[-1]) and \
                    bool(torch.all((m.value == 0) | (m.value == float("-inf")))):
                causal, src = True, src.args[0]
        if causal:
            if dim % rank != rank - 1:
                raise Unsupported("a causal softmax must be over the last axis")
            attrs["causal"] = None
        # scale: softmax(x * c)
        if hasattr(src, "op") and src.target in (aten.mul.Tensor, aten.mul.Scalar) and \
                not hasattr(src.args[1], "op") and len(src.users) == 1:
            attrs["scale"] = mlir.float_attr(float(src.args[1]))
            src = src.args[0]
        if dim % rank != rank - 1:
            attrs["axis"] = f"{dim % rank} : i64"
        x = im.tensor(src)
        return im.op(node, "softmax", [x], attrs, [shape], type_style="same")

    reg([aten._softmax.default, aten.softmax.int], softmax)

    def where(im, node):
        # scaled_dot_product_attention's guard for rows where every key is
        # masked: where(!any(s != -inf, -1), 0, softmax(s)). het.softmax's
        # causal mask always keeps the diagonal (and an unmasked softmax keeps
        # everything), so no row is fully masked and the guard is the softmax.
        cond, fill, probs = node.args
        if calls(probs, aten._softmax.default) and calls(fill, aten.full_like.default) and \
                float(fill.args[1]) == 0.0 and calls(cond, aten.logical_not.default) and \
                calls(cond.args[0], aten.any.dim) and calls(cond.args[0].args[0], aten.logical_not.default):
            eq = cond.args[0].args[0].args[0]
            if calls(eq, aten.eq.Scalar) and eq.args[0] is probs.args[0] and float(eq.args[1]) == float("-inf"):
                return im.tensor(probs)
        return where_elementwise(im, node)

    reg([aten.where.self], where)
