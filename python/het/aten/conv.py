"""Convolution and pooling: het.conv2d, het.max_pool2d, het.avg_pool2d
(average pooling without padding or excluding it, and adaptive average
pooling to sizes that divide the input's)."""

from .. import mlir
from ..importer import Unsupported


def register(reg, aten):
    def convolution(im, node):
        x_arg, w_arg, b_arg, stride, padding, dilation, transposed, _out_pad, groups = node.args[:9]
        if transposed:
            raise Unsupported("transposed convolution")
        if len(stride) != 2:
            raise Unsupported(f"{len(stride)}-d convolution (het.conv2d is 2-d)")
        if isinstance(padding, str):
            raise Unsupported(f"padding={padding!r}")
        x = im.tensor(x_arg)
        ops = [x, im.tensor(w_arg)] + ([im.tensor(b_arg, like=x)] if b_arg is not None else [])
        attrs = {}
        if list(stride) != [1, 1]:
            attrs["strides"] = mlir.int_array(stride)
        if list(padding) != [0, 0]:
            attrs["padding"] = mlir.int_array(padding)
        if list(dilation) != [1, 1]:
            attrs["dilation"] = mlir.int_array(dilation)
        if groups != 1:
            attrs["groups"] = f"{groups} : i64"
        return im.op(node, "conv2d", ops, attrs, [im.shape_of(node)])

    reg([aten.convolution.default], convolution)

    def pool_attrs(kernel, stride, padding):
        kernel = list(kernel) * (2 // len(kernel))
        stride = list(stride or kernel) * (2 // len(stride or kernel))
        padding = list(padding or [0, 0]) * (2 // len(padding or [0, 0]))
        attrs = {"kernel": mlir.int_array(kernel), "strides": mlir.int_array(stride)}
        if padding != [0, 0]:
            attrs["padding"] = mlir.int_array(padding)
        return attrs, padding

    def max_pool(im, node):
        """het.max_pool2d; its shape is the values' (the first result of
        max_pool2d_with_indices, whose indices het does not produce)."""
        args = list(node.args) + [None] * 6
        x_arg, kernel, stride, padding, dilation, ceil = args[:6]
        if dilation not in (None, [1, 1], [1], 1) or ceil:
            raise Unsupported("max pooling with dilation or ceil_mode")
        attrs, _ = pool_attrs(kernel, stride, padding)
        val = node.meta["val"]
        shape = tuple((val[0] if isinstance(val, (tuple, list)) else val).shape)
        return im.op(node, "max_pool2d", [im.tensor(x_arg)], attrs, [shape])

    def max_pool_with_indices(im, node):
        return (max_pool(im, node), None)

    reg([aten.max_pool2d_with_indices.default], max_pool_with_indices)
    reg([aten.max_pool2d.default], max_pool)

    def avg_pool(im, node):
        args = list(node.args) + [None] * 7
        x_arg, kernel, stride, padding, ceil, count_include_pad, divisor = args[:7]
        if count_include_pad is None:
            count_include_pad = True
        attrs, pad = pool_attrs(kernel, stride, padding)
        if ceil or divisor is not None:
            raise Unsupported("average pooling with ceil_mode or divisor_override")
        if pad != [0, 0] and count_include_pad:
            raise Unsupported("average pooling with padding and count_include_pad=True "
                               "(het.avg_pool2d excludes padding)")
        return im.op(node, "avg_pool2d", [im.tensor(x_arg)], attrs, [im.shape_of(node)])

    reg([aten.avg_pool2d.default], avg_pool)

    def adaptive_avg_pool(im, node):
        x = im.tensor(node.args[0])
        out = list(node.args[1])
        h, w = x.shape[-2:]
        if any(o == 0 for o in out) or h % out[0] or w % out[1]:
            raise Unsupported(f"adaptive average pooling from {h}x{w} to {out} (sizes must divide)")
        k = [h // out[0], w // out[1]]
        attrs = {"kernel": mlir.int_array(k), "strides": mlir.int_array(k)}
        return im.op(node, "avg_pool2d", [x], attrs, [im.shape_of(node)])

    reg([aten._adaptive_avg_pool2d.default, aten.adaptive_avg_pool2d.default], adaptive_avg_pool)
