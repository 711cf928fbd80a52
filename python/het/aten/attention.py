"""Softmax with the attention patterns folded in: a causal mask (masked_fill
with a `tril` buffer, transformers' where(bias, x, finfo.min) and additive
0/finfo.min mask, or scaled_dot_product_attention's additive 0/-inf mask)
becomes `{causal}`, a constant factor or divisor in front becomes `{scale}`, and
scaled_dot_product_attention's guard for fully masked rows is dropped (a
causal or unmasked softmax has none).
"""

from .. import mlir
from . import calls
from ..importer import Unsupported


def register(reg, aten, where_elementwise):
    """`where_elementwise`: the handler of any other `where`."""
    import torch

    def causal_mask_kind(mask, q, k):
        """Whether `mask` (bool, True = keep) is the causal pattern in every
        [q, k] matrix it holds (a mask per sample, as transformers builds, or
        one broadcast)."""
        m = mask.to(torch.bool)
        if m.dim() < 2 or tuple(m.shape[-2:]) != (q, k):
            return False
        i = torch.arange(q).unsqueeze(1)
        j = torch.arange(k).unsqueeze(0)
        keep = j <= i + (k - q)
        return bool(torch.equal(m, keep.expand_as(m)))

    # Masked entries: -inf, or a dtype's lowest finite value (transformers'
    # `finfo.min`; bf16's is above f32's): exp of either minus a row's
    # maximum is exactly 0 where a causal row keeps its diagonal.
    MASKED = float(torch.finfo(torch.bfloat16).min)

    def scalar(value):
        """A constant with one element (a Python number or a 0-d/1-element tensor)."""
        return value is not None and getattr(value, "numel", lambda: 1)() == 1

    def peel_mask(im, src, shape):
        """`x` when `src` masks x causally: where(masked, fill, x),
        where(keep, x, fill) or x + additive mask (0 where kept, -inf or
        finfo.min where masked); else None."""
        q, k = shape[-2], shape[-1]
        if calls(src, aten.where.self):
            cond, a, b = src.args
            c = im.constant(cond)
            if c is None or not isinstance(c, torch.Tensor):
                return None
            c = c.to(torch.bool)
            fill_a, fill_b = im.constant(a), im.constant(b)
            if scalar(fill_a) and float(fill_a) <= MASKED and causal_mask_kind(~c, q, k):
                return b
            if scalar(fill_b) and float(fill_b) <= MASKED and causal_mask_kind(c, q, k):
                return a
            return None
        if calls(src, aten.add.Tensor):
            for x, m in ((src.args[0], src.args[1]), (src.args[1], src.args[0])):
                if not hasattr(m, "op"):
                    continue
                m = im.constant(m)
                if isinstance(m, torch.Tensor) and m.is_floating_point() and \
                        causal_mask_kind(m == 0, q, k) and \
                        bool(torch.all((m == 0) | (m <= MASKED))):
                    return x
        return None

    def peel_scale(im, src):
        """(x, c) when `src` is x * c or x / c for a constant scalar c; else None."""
        if not (calls(src, aten.mul.Tensor, aten.mul.Scalar, aten.div.Tensor, aten.div.Scalar)
                and len(src.users) == 1):
            return None
        c = im.constant(src.args[1])
        if not scalar(c) or not hasattr(src.args[0], "op"):
            return None
        c = float(c)
        if src.target in (aten.div.Tensor, aten.div.Scalar):
            if c == 0.0:
                return None
            c = 1.0 / c
        return src.args[0], c

    VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default,
             aten.expand.default, aten.clone.default)

    def through_views(node):
        """`node` past one-user views and copies (reshapes, expand, clone)."""
        while calls(node, *VIEWS) and len(node.users) == 1:
            node = node.args[0]
        return node

    def operand_scales(im, scores):
        """scaled_dot_product_attention's math form scales q and k by
        sqrt(scale) each before q @ k^T: the one-user `x * c` (c a constant
        scalar) on either operand of the scores' bmm, with their product, or
        None. `scores` may be a view of the bmm."""
        bmm = scores
        while calls(bmm, *VIEWS):
            bmm = bmm.args[0]
        if not calls(bmm, aten.bmm.default, aten.matmul.default) or len(bmm.users) != 1:
            return None
        muls, product = [], 1.0
        for operand in bmm.args[:2]:
            mul = through_views(operand) if len(operand.users) == 1 else operand
            if calls(mul, aten.mul.Tensor, aten.mul.Scalar) and len(mul.users) == 1 and \
                    hasattr(mul.args[0], "op") and mul not in im.values:
                c = im.constant(mul.args[1])
                if scalar(c):
                    muls.append(mul)
                    product *= float(c)
        return (muls, product) if muls else None

    def softmax(im, node):
        src, dim = node.args[0], node.args[1]
        shape = im.shape_of(node)
        rank = len(shape)
        attrs = {}
        causal, scale = False, None
        # Peel, in any order, the causal masks (masked_fill with a `tril`
        # buffer, transformers' where(bias, x, finfo.min) and its additive
        # 0 / finfo.min mask, scaled_dot_product_attention's 0 / -inf one),
        # a constant factor or divisor, and casts to the same dtype, so that
        # het-fuse-attention finds matmul -> softmax -> matmul.
        while hasattr(src, "op"):
            if calls(src, aten._to_copy.default) and hasattr(src.args[0], "op") and \
                    src.meta.get("val") is not None and src.args[0].meta.get("val") is not None and \
                    src.meta["val"].dtype == src.args[0].meta["val"].dtype:
                src = src.args[0]
                continue
            unmasked = peel_mask(im, src, shape)
            if unmasked is not None and hasattr(unmasked, "op"):
                causal, src = True, unmasked
                continue
            scaled = peel_scale(im, src) if scale is None else None
            if scaled is not None:
                src, scale = scaled
                continue
            break
        split = operand_scales(im, src) if hasattr(src, "op") else None
        if split is not None:
            # Fold the operands' factors into the softmax's scale: the muls
            # become their inputs (they have no other reader).
            muls, product = split
            scale = product * (1.0 if scale is None else scale)
            for mul in muls:
                im.values[mul] = im.get(mul.args[0])
        if causal:
            if dim % rank != rank - 1:
                raise Unsupported("a causal softmax must be over the last axis")
            attrs["causal"] = None
        if scale is not None:
            attrs["scale"] = mlir.float_attr(scale)
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
