"""Mixture of experts: het's torch ops (python/het/moe.py, which het.compat
puts into transformers' sparse MoE blocks while capturing) map one to one
onto the het.moe_* ops."""


def register(reg, torch):
    from .. import mlir, moe  # noqa: F401  (moe defines torch.ops.het.moe_*)

    ops = torch.ops.het

    def router(im, node):
        logits = im.tensor(node.args[0])
        top_k, normalize = int(node.args[1]), bool(node.args[2])
        attrs = {"top_k": f"{top_k} : i64"}
        if normalize:
            attrs["normalize"] = None
        shape = (logits.shape[0], top_k)
        return im.op(node, "moe_router", [logits], attrs, [shape, shape],
                     result_elems=[logits.elem, "i64"])

    def dispatch(im, node):
        x, indices = im.tensor(node.args[0]), im.tensor(node.args[1])
        factor = float(node.args[3])
        attrs = {"capacity_factor": mlir.float_attr(factor)} if factor > 0 else {}
        return im.op(node, "moe_dispatch", [x, indices], attrs, [im.shape_of(node)])

    def combine(im, node):
        out, indices, weights = (im.tensor(a) for a in node.args[:3])
        return im.op(node, "moe_combine", [out, indices, weights], {}, [im.shape_of(node)])

    def expert_matmul(im, node):
        rows, weight, indices = (im.tensor(a) for a in node.args[:3])
        attrs = {"transpose_rhs": None} if node.args[3] else {}
        return im.op(node, "moe_expert_matmul", [rows, weight, indices], attrs, [im.shape_of(node)])

    def expert_fraction(im, node):
        indices = im.tensor(node.args[0])
        return im.op(node, "moe_expert_fraction", [indices], {}, [im.shape_of(node)],
                     result_elem=im.elem_of(node))

    reg([ops.moe_router.default], router)
    reg([ops.moe_dispatch.default], dispatch)
    reg([ops.moe_combine.default], combine)
    reg([ops.moe_expert_matmul.default], expert_matmul)
    reg([ops.moe_expert_fraction.default], expert_fraction)
