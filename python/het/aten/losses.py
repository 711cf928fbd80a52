"""Embeddings and losses: `embedding` (with padding_idx), and cross-entropy
in the two forms decomposition leaves -- nll_loss(log_softmax(z)) and the
sum/where/gather/count division F.cross_entropy becomes -- as
`het.cross_entropy` (mean over the labels; ignore_index is not modelled).
"""

from . import calls
from ..importer import Unsupported


def register(reg, aten, div_elementwise):
    """`div_elementwise`: the handler of any other division."""

    def decomposed_cross_entropy(node):
        """F.cross_entropy(z, t) (mean, no weights) after decomposition:
        sum(where(t != ii, -gather(log_softmax(z, 1), 1, t'), 0)) / sum(t != ii).
        Returns (z, t) or None."""
        num, den = node.args[0], node.args[1]
        if not (calls(num, aten.sum.dim_IntList, aten.sum.default) and calls(den, aten._to_copy.default)):
            return None
        masked = num.args[0]
        if not (calls(masked, aten.where.self) and calls(masked.args[1], aten.neg.default)):
            return None
        picked = masked.args[1].args[0]
        if calls(picked, aten.squeeze.dims, aten.squeeze.dim):
            picked = picked.args[0]
        if not (calls(picked, aten.gather.default) and calls(picked.args[0], aten._log_softmax.default)):
            return None
        logsm = picked.args[0]
        index = picked.args[2]
        if calls(index, aten.unsqueeze.default):
            index = index.args[0]
        if not (calls(index, aten.where.self) and calls(index.args[0], aten.ne.Scalar)):
            return None
        target = index.args[1]
        count = den.args[0]
        if not (calls(count, aten.sum.dim_IntList, aten.sum.default) and calls(count.args[0], aten.ne.Scalar)
                and count.args[0].args[0] is target and index.args[0].args[0] is target):
            return None
        logits = logsm.args[0]
        if calls(logits, aten._to_copy.default) and \
                logits.args[0].meta["val"].dtype == logits.meta["val"].dtype:
            logits = logits.args[0]
        if logsm.args[1] % len(logsm.meta["val"].shape) != len(logsm.meta["val"].shape) - 1:
            return None
        return logits, target

    def div(im, node):
        ce = decomposed_cross_entropy(node)
        if ce is not None:
            # ignore_index is not modelled: het.cross_entropy needs every label in [0, C).
            logits = im.tensor(ce[0])
            labels = im.tensor(ce[1])
            return im.op(node, "cross_entropy", [logits, labels], {}, [()], result_elem=logits.elem)
        return div_elementwise(im, node)

    reg([aten.div.Tensor, aten.div.Scalar], div)

    def embedding(im, node):
        defaults = [None, None, -1, False, False]  # weight, indices, padding_idx, scale, sparse
        args = list(node.args) + defaults[len(node.args):]
        padding_idx, scale_grad_by_freq, sparse = args[2:5]
        if scale_grad_by_freq or sparse:
            raise Unsupported("embedding with scale_grad_by_freq or sparse gradients")
        w = im.tensor(node.args[0])
        idx = im.tensor(node.args[1])
        attrs = {}
        if padding_idx is not None and padding_idx >= 0:
            attrs["padding_idx"] = f"{int(padding_idx)} : i64"  # its row gets no gradient
        return im.op(node, "embedding", [w, idx], attrs, [im.shape_of(node)])

    reg([aten.embedding.default], embedding)

    def nll_loss(im, node):
        # cross_entropy = nll_loss(log_softmax(x, dim=1 / -1), target)
        src, target, weight, reduction, ignore_index = node.args[:5]
        if weight is not None or reduction != 1:
            raise Unsupported("nll_loss with class weights or reduction other than 'mean'")
        if not (hasattr(src, "op") and src.target is aten._log_softmax.default):
            raise Unsupported("nll_loss of something other than log_softmax")
        logits = im.tensor(src.args[0])
        if src.args[1] % len(logits.shape) != len(logits.shape) - 1:
            raise Unsupported("cross entropy over a class axis that is not the last")
        labels = im.tensor(target)
        loss = im.op(node, "cross_entropy", [logits, labels], {}, [()], result_elem=logits.elem)
        return (loss, None)

    reg([aten.nll_loss_forward.default], nll_loss)
