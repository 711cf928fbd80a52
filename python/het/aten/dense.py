"""Dense layers: addmm/mm/linear as `het.linear` (the weight kept in
PyTorch's [out, in] layout: a transposed weight folds into the op), batched
products as `het.matmul` (a swap of the last two dimensions folds into
transpose_lhs/rhs), and nanoGPT's fused q/k/v projection split into one
linear layer per chunk on row slices of its parameters.
"""

from . import calls
from ..importer import Unsupported


def register(reg, aten, split_pieces):
    """`split_pieces`: the handler of any other split (a slice per piece)."""

    def transposed_matrix(im, arg):
        """If `arg` is `w.t()` / `w.permute(1, 0)` of a 2-D tensor, returns w's node."""
        if hasattr(arg, "op") and arg.op == "call_function":
            if arg.target is aten.t.default or (
                    arg.target is aten.permute.default and list(arg.args[1]) == [1, 0]):
                return arg.args[0]
        return None

    def linear_like(im, node, x_arg, w_arg, bias_arg):
        w_node = transposed_matrix(im, w_arg)
        x = im.tensor(x_arg)
        if w_node is not None:
            w = im.tensor(w_node)
            operands = [x, w] + ([im.tensor(bias_arg, like=x)] if bias_arg is not None else [])
            return im.op(node, "linear", operands, {}, [im.shape_of(node)])
        w = im.tensor(w_arg, like=x)
        y = im.op(node, "matmul", [x, w], {}, [im.shape_of(node)])
        if bias_arg is not None:
            b = im.tensor(bias_arg, like=x)
            y = im.op(node, "add", [y, b], {}, [im.shape_of(node)], hint=node.name + "_bias")
        return y

    def addmm(im, node):
        beta = node.kwargs.get("beta", 1)
        alpha = node.kwargs.get("alpha", 1)
        if beta != 1 or alpha != 1:
            raise Unsupported("addmm with beta/alpha other than 1")
        return linear_like(im, node, node.args[1], node.args[2], node.args[0])

    def mm(im, node):
        return linear_like(im, node, node.args[0], node.args[1], None)

    def linear(im, node):
        x = im.tensor(node.args[0])
        w = im.tensor(node.args[1])
        bias = node.args[2] if len(node.args) > 2 else None
        ops = [x, w] + ([im.tensor(bias, like=x)] if bias is not None else [])
        return im.op(node, "linear", ops, {}, [im.shape_of(node)])

    def only_user(n):
        users = list(n.users)
        return users[0] if len(users) == 1 else None

    def param_placeholder(im, n):
        return hasattr(n, "op") and n.op == "placeholder" and im.input_kind[n.name][0] == "param"

    def split_linear(im, node):
        """`linear(x).split(sizes, dim=-1)` (nanoGPT's fused q/k/v): one
        het.linear per chunk on row slices of the weight and bias. het has no
        slice op, so each slice is its own parameter, named
        `<name>[<begin>:<end>]` (rows); het.to_torch writes them back into the
        PyTorch parameter, and tensor parallelism splits q, k and v by heads
        like separate projections. The weight and bias must have no other
        use; any other split is a slice per piece (aten/shape.py)."""
        src, dim = node.args[0], node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
        rank = len(src.meta["val"].shape)
        if dim % rank != rank - 1:
            raise Unsupported("split along a dimension other than the last (het has no slice op)")
        view = None
        if calls(src, aten.view.default, aten._unsafe_view.default, aten.reshape.default) and only_user(src):
            view, src = src, src.args[0]
            if view.meta["val"].shape[-1] != src.meta["val"].shape[-1]:
                raise Unsupported("split of a reshaped linear output")
        if not (calls(src, aten.addmm.default, aten.mm.default) and only_user(src) is (view or node)):
            raise Unsupported("split of a computed tensor other than a linear layer's output "
                               "(het has no slice op)")
        bias = src.args[0] if src.target is aten.addmm.default else None
        x_arg, wt = (src.args[1], src.args[2]) if bias is not None else (src.args[0], src.args[1])
        w = transposed_matrix(im, wt)
        if w is None or not param_placeholder(im, w) or (bias is not None and not param_placeholder(im, bias)):
            raise Unsupported("split of a product that is not a linear layer with parameters")
        if len(w.users) != 1 or only_user(wt) is not src or (bias is not None and len(bias.users) != 1):
            raise Unsupported("split linear layer whose weight or bias is also used elsewhere")
        x = im.tensor(x_arg)
        w_name = im.input_kind[w.name][1]
        b_name = im.input_kind[bias.name][1] if bias is not None else None
        chunks = [tuple(v.shape) for v in node.meta["val"]]
        results, begin = [], 0
        for i, shape in enumerate(chunks):
            end = begin + shape[-1]
            ops = [x, im.param_slice(w, w_name, begin, end)]
            if bias is not None:
                ops.append(im.param_slice(bias, b_name, begin, end))
            y = im.op(node, "linear", ops, {}, [tuple(x.shape[:-1]) + (end - begin,)],
                      hint=f"{node.name}_{i}")
            if view is not None:
                y = im.reshape(node, y, shape)
            results.append(y)
            begin = end
        return tuple(results)

    def split(im, node):
        try:
            return split_linear(im, node)
        except Unsupported:
            return split_pieces(im, node)

    reg([aten.split_with_sizes.default, aten.split.Tensor], split)

    reg([aten.addmm.default], addmm)
    reg([aten.mm.default], mm)
    reg([aten.linear.default], linear)

    def swaps_last_two(arg):
        if hasattr(arg, "op") and arg.op == "call_function":
            if arg.target is aten.permute.default:
                perm = list(arg.args[1])
                r = len(perm)
                if r >= 2 and perm[:-2] == list(range(r - 2)) and perm[-2:] == [r - 1, r - 2]:
                    return arg.args[0]
            if arg.target is aten.transpose.int:
                a = arg.args[1]
                b = arg.args[2]
                r = len(arg.meta["val"].shape)
                if {a % r, b % r} == {r - 1, r - 2}:
                    return arg.args[0]
        return None

    def bmm(im, node):
        attrs = {}
        lhs_arg, rhs_arg = node.args[0], node.args[1]
        inner = swaps_last_two(rhs_arg)
        if inner is not None:
            rhs_arg, attrs["transpose_rhs"] = inner, None
        inner = swaps_last_two(lhs_arg)
        if inner is not None:
            lhs_arg, attrs["transpose_lhs"] = inner, None
        a = im.tensor(lhs_arg)
        b = im.tensor(rhs_arg, like=a)
        return im.op(node, "matmul", [a, b], attrs, [im.shape_of(node)])

    reg([aten.bmm.default, aten.matmul.default], bmm)
