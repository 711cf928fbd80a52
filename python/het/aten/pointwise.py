"""Point-wise ATen ops as `het.elementwise` with a scalar body.

het differentiates the body itself (reverse mode over its arith/math ops),
so each op here needs only its forward formula; the backward follows
PyTorch's where PyTorch's backward is a formula of the same ops (sigmoid,
silu, tanh, erf, pow, sqrt, rsqrt, division), and the subgradient choices
match PyTorch's (hardtanh passes no gradient at its bounds, clamp does;
abs is 0 at 0). Comparisons are not materialised as tensors: they stay
predicates that `where` folds into its body.
"""

from .. import mlir
from ..importer import Unsupported, Const, Value


class Body:
    """The scalar body of one het.elementwise: arguments e0, e1, ... and
    arith/math ops on scalars of one float element type."""

    def __init__(self, elem: str, arity: int):
        self.elem = elem
        self.args = [f"%e{i}" for i in range(arity)]
        self.lines = []

    def _emit(self, text: str) -> str:
        name = f"%s{len(self.lines)}"
        self.lines.append(f"{name} = {text}")
        return name

    def const(self, value: float) -> str:
        return self._emit(f"arith.constant {mlir.scalar_literal(value, self.elem)}")

    def _binary(self, op, a, b):
        return self._emit(f"{op} {a}, {b} : {self.elem}")

    def _unary(self, op, a):
        return self._emit(f"{op} {a} : {self.elem}")

    def add(self, a, b): return self._binary("arith.addf", a, b)
    def sub(self, a, b): return self._binary("arith.subf", a, b)
    def mul(self, a, b): return self._binary("arith.mulf", a, b)
    def div(self, a, b): return self._binary("arith.divf", a, b)
    def max(self, a, b): return self._binary("arith.maximumf", a, b)
    def min(self, a, b): return self._binary("arith.minimumf", a, b)
    def pow(self, a, b): return self._binary("math.powf", a, b)
    def neg(self, a): return self._unary("arith.negf", a)
    def exp(self, a): return self._unary("math.exp", a)
    def log(self, a): return self._unary("math.log", a)
    def tanh(self, a): return self._unary("math.tanh", a)
    def erf(self, a): return self._unary("math.erf", a)
    def sqrt(self, a): return self._unary("math.sqrt", a)
    def rsqrt(self, a): return self._unary("math.rsqrt", a)
    def abs(self, a): return self._unary("math.absf", a)

    def cmp(self, predicate: str, a, b) -> str:
        return self._emit(f"arith.cmpf {predicate}, {a}, {b} : {self.elem}")

    def select(self, c, a, b):
        return self._emit(f"arith.select {c}, {a}, {b} : {self.elem}")

    def sigmoid(self, a):
        one = self.const(1.0)
        return self.div(one, self.add(one, self.exp(self.neg(a))))


def elementwise(im, node, operands, build, shape=None, elem=None) -> Value:
    """Emits het.elementwise over `operands` (het Values; they broadcast to
    the node's shape) whose body `build(body, *args)` returns the result."""
    elem = elem or operands[0].elem
    if not elem.startswith(("f", "b")):
        raise Unsupported(f"point-wise op on {elem} tensors (het computes on floats)")
    shape = im.shape_of(node) if shape is None else tuple(shape)
    body = Body(elem, len(operands))
    result = build(body, *body.args)
    out = Value(im.fresh(node.name), shape, elem)
    ins = ", ".join(v.ref for v in operands)
    in_types = ", ".join(v.type for v in operands)
    args = ", ".join(f"{a}: {elem}" for a in body.args)
    lines = [f"het.elementwise {ins} {{het.layer = {im.layer(node)} : i64}} "
             f": ({in_types}) -> {out.type} {{",
             f"    ^bb0({args}):"]
    lines += [f"      {line}" for line in body.lines]
    lines += [f"      het.yield {result} : {elem}", "    }"]
    im.emit(node, "\n".join(lines), [out])
    return out


class Predicate:
    """A comparison of two float operands, kept symbolic for `where`:
    `predicate` is an arith.cmpf predicate, `lhs`/`rhs` Values or floats."""

    def __init__(self, predicate, lhs, rhs):
        self.predicate, self.lhs, self.rhs = predicate, lhs, rhs

    def negated(self):
        inverse = {"ogt": "ule", "oge": "ult", "olt": "uge", "ole": "ugt", "oeq": "une",
                   "one": "ueq", "ugt": "ole", "uge": "olt", "ult": "oge", "ule": "ogt",
                   "ueq": "one", "une": "oeq"}
        return Predicate(inverse[self.predicate], self.lhs, self.rhs)


def _float_operand(im, arg, like=None):
    """A het Value, or a Python float for scalars (inlined as constants)."""
    if hasattr(arg, "op"):
        v = im.get(arg)
        if isinstance(v, Const) and not hasattr(v.value, "shape"):
            return float(v.value)
        if isinstance(v, Const) and v.value.dim() == 0 and v.value.is_floating_point():
            return float(v.value)
        return im.tensor(arg, like=like)
    if isinstance(arg, bool):
        return float(arg)
    if isinstance(arg, (int, float)):
        return float(arg)
    raise Unsupported(f"operand {arg!r}")


def _combine(im, node, parts, formula):
    """het.elementwise over the tensor parts; floats become body constants.
    `formula(body, *scalars)` gets one scalar per part, in order."""
    tensors = [p for p in parts if isinstance(p, Value)]
    if not tensors:
        raise Unsupported("no tensor operand")
    elem = tensors[0].elem
    for t in tensors:
        if t.elem != elem:
            raise Unsupported(f"operands of types {elem} and {t.elem}")

    def build(body, *args):
        scalars, k = [], 0
        for p in parts:
            if isinstance(p, Value):
                scalars.append(args[k])
                k += 1
            else:
                scalars.append(body.const(p))
        return formula(body, *scalars)

    return elementwise(im, node, tensors, build, elem=elem)


def register(reg, aten):
    def unary(formula):
        def handler(im, node):
            return _combine(im, node, [im.tensor(node.args[0])], formula)
        return handler

    reg([aten.exp.default], unary(lambda b, x: b.exp(x)))
    reg([aten.log.default], unary(lambda b, x: b.log(x)))
    reg([aten.neg.default], unary(lambda b, x: b.neg(x)))
    reg([aten.sqrt.default], unary(lambda b, x: b.sqrt(x)))
    reg([aten.rsqrt.default], unary(lambda b, x: b.rsqrt(x)))
    reg([aten.tanh.default], unary(lambda b, x: b.tanh(x)))
    reg([aten.erf.default], unary(lambda b, x: b.erf(x)))
    reg([aten.abs.default], unary(lambda b, x: b.abs(x)))
    reg([aten.reciprocal.default], unary(lambda b, x: b.div(b.const(1.0), x)))
    reg([aten.sigmoid.default], unary(lambda b, x: b.sigmoid(x)))
    reg([aten.silu.default], unary(lambda b, x: b.mul(x, b.sigmoid(x))))
    reg([aten.log1p.default], unary(lambda b, x: b.log(b.add(b.const(1.0), x))))

    def power(im, node):
        x = im.tensor(node.args[0])
        e = node.args[1]
        if hasattr(e, "op"):
            raise Unsupported("a computed exponent")
        e = float(e)
        shortcuts = {1.0: lambda b, v: v, 2.0: lambda b, v: b.mul(v, v),
                     0.5: lambda b, v: b.sqrt(v), -0.5: lambda b, v: b.rsqrt(v),
                     -1.0: lambda b, v: b.div(b.const(1.0), v)}
        if e in shortcuts:
            return _combine(im, node, [x], shortcuts[e])
        return _combine(im, node, [x], lambda b, v: b.pow(v, b.const(e)))

    reg([aten.pow.Tensor_Scalar], power)

    def divide(im, node):
        if node.kwargs.get("rounding_mode") is not None:
            raise Unsupported("div with a rounding mode")
        a = _float_operand(im, node.args[0])
        b = _float_operand(im, node.args[1], like=a if isinstance(a, Value) else None)
        return _combine(im, node, [a, b], lambda body, x, y: body.div(x, y))

    def hardtanh(im, node):
        lo = float(node.args[1]) if len(node.args) > 1 else -1.0
        hi = float(node.args[2]) if len(node.args) > 2 else 1.0
        # torch: clamp forward, gradient only strictly inside (lo, hi)
        return _combine(im, node, [im.tensor(node.args[0])], lambda b, x: b.select(
            b.cmp("ole", x, b.const(lo)), b.const(lo),
            b.select(b.cmp("oge", x, b.const(hi)), b.const(hi), x)))

    reg([aten.hardtanh.default], hardtanh)

    def clamp(im, node):
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
        if node.target is aten.clamp_min.default:
            lo, hi = node.args[1], None
        if node.target is aten.clamp_max.default:
            lo, hi = None, node.args[1]
        if hasattr(lo, "op") or hasattr(hi, "op"):
            raise Unsupported("clamp with tensor bounds")

        # torch: gradient where lo <= x <= hi (bounds included)
        def formula(b, x):
            y = x
            if lo is not None:
                y = b.select(b.cmp("olt", y, b.const(float(lo))), b.const(float(lo)), y)
            if hi is not None:
                y = b.select(b.cmp("ogt", y, b.const(float(hi))), b.const(float(hi)), y)
            return y

        return _combine(im, node, [im.tensor(node.args[0])], formula)

    reg([aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default], clamp)

    def comparison(predicate):
        def handler(im, node):
            a = _float_operand(im, node.args[0])
            b = _float_operand(im, node.args[1], like=a if isinstance(a, Value) else None)
            for side in (a, b):
                if isinstance(side, Value) and not side.elem.startswith(("f", "b")):
                    raise Unsupported(f"comparison of {side.elem} tensors")
            return Predicate(predicate, a, b)
        return handler

    for name, predicate in (("gt", "ogt"), ("ge", "oge"), ("lt", "olt"), ("le", "ole"),
                            ("eq", "oeq"), ("ne", "une")):
        packet = getattr(aten, name)
        reg([packet.Tensor, packet.Scalar], comparison(predicate))

    def logical_not(im, node):
        p = im.get(node.args[0])
        if not isinstance(p, Predicate):
            raise Unsupported("logical_not of a tensor het does not compute")
        return p.negated()

    reg([aten.logical_not.default], logical_not)

    def where(im, node, condition=None):
        """where(cond, a, b); with `condition` given, cond ? 1 : 0 (a
        comparison converted to a float mask)."""
        if condition is not None:
            c, x, y = condition, 1.0, 0.0
        else:
            cond, a, b = node.args
            c = im.get(cond) if hasattr(cond, "op") else Const(cond)
            x = _float_operand(im, a)
            y = _float_operand(im, b, like=x if isinstance(x, Value) else None)
        like = next((v for v in (x, y) if isinstance(v, Value)), None)
        if isinstance(c, Predicate):
            parts = [c.lhs, c.rhs, x, y]
            return _combine(im, node, parts, lambda body, p, q, u, v: body.select(
                body.cmp(c.predicate, p, q), u, v))
        if isinstance(c, Const):
            import torch

            if like is None:
                raise Unsupported("where() of two scalars with a constant condition")
            mask = torch.as_tensor(c.value).to(torch.float64 if like.elem == "f64" else torch.float32)
            m = im.const_value(Const(mask), like=like)
            return _combine(im, node, [m, x, y], lambda body, k, u, v: body.select(
                body.cmp("une", k, body.const(0.0)), u, v))
        raise Unsupported("where() with a condition het does not compute")

    return {"div": divide, "where": where}
