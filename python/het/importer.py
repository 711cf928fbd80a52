"""PyTorch -> het dialect importer.

`from_torch` captures a module with `torch.export`, decomposes it to core
ATen ops (`ExportedProgram.run_decompositions`) and maps those ops to het ops.
Emission is demand-driven from the graph's output: an op is printed only when
something that reaches the loss uses it, so ops that only update BatchNorm's
running statistics, or transposes folded into `het.linear`, never appear.

Conventions (see docs/python.md):

* arguments: the data inputs (`het.name` "input", or the forward's argument
  names when there are several), then "target" when a loss is added, then
  every trainable parameter that the loss depends on (`het.param`, `het.name`
  = its PyTorch name), then constants the graph needs as tensors (`het.name`
  "const.<n>", e.g. `torch.arange` positions) whose values are exported with
  the parameters;
* one result, the 0-d loss. It carries no `het.name`: het-autodiff (as of
  this writing) keeps the forward's result attributes when it builds the
  training step and then rejects the step; the step names its own results
  ("loss" and the parameter names), and het-eval calls an unnamed forward
  result "result0";
* `het.layer` from the module hierarchy: one id per top-level child module
  (per element when that child is a ModuleList/Sequential, e.g. transformer
  blocks), in order of first use; ops outside any module take the largest
  layer of their operands.
"""

import operator
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from . import mlir
from .compat import capture
from .errors import HetImportError

LOSSES = ("cross_entropy", "mse", "none")


@dataclass
class Value:
    """An SSA value of the emitted function."""

    name: str  # without '%'
    shape: tuple
    elem: str  # MLIR element type

    @property
    def type(self) -> str:
        return mlir.tensor_type(self.shape, self.elem)

    @property
    def ref(self) -> str:
        return "%" + self.name


@dataclass
class Argument:
    value: Value
    het_name: str
    param: bool = False
    state: bool = False  # a buffer the forward pass updates (running statistics)


class HetProgram(str):
    """The MLIR text of an imported model (a `str`), with what runs it.

    Attributes: `params` (het.name -> numpy array, the initial parameters),
    `state` (het.name -> numpy array: the buffers the forward pass updates,
    BatchNorm's running statistics, which the function also returns),
    `constants` (het.name -> numpy array), `input_names` (data inputs in
    argument order, including "target"), `function` (the func name),
    `num_layers`, `precision` (the format it trains in: fp32, bf16, fp16).
    """

    params: Dict[str, np.ndarray]
    state: Dict[str, np.ndarray]
    constants: Dict[str, np.ndarray]
    input_names: List[str]
    precision: str = "fp32"
    function: str
    num_layers: int

    def initial_values(self) -> Dict[str, np.ndarray]:
        """Parameters, state and constants: what het-eval needs besides the data."""
        out = dict(self.params)
        out.update(self.state)
        out.update(self.constants)
        return out

    def save(self, mlir_path, npz_path=None):
        """Writes the MLIR and, beside it (`.npz`), parameters, state and constants."""
        import os

        mlir_path = str(mlir_path)
        if npz_path is None:
            npz_path = os.path.splitext(mlir_path)[0] + ".npz"
        with open(mlir_path, "w") as f:
            f.write(str(self))
        np.savez(npz_path, **self.initial_values())
        return mlir_path, npz_path


def _fqn_from_source(expr: str) -> str:
    """`getattr(L['self'].blocks, '0').attn` -> `blocks.0.attn`."""
    prev = None
    while prev != expr:
        prev = expr
        expr = re.sub(r"getattr\(([^,()]*),\s*'([^']*)'\)", r"\1.\2", expr)
    expr = re.sub(r"^L\['[^']*'\]", "", expr)
    expr = re.sub(r"\._modules\['([^']*)'\]", r".\1", expr)
    expr = re.sub(r"\[(\d+)\]", r".\1", expr)
    expr = re.sub(r"\['([^']*)'\]", r".\1", expr)
    # a block of a sliced stack (`for layer in self.layers[:n]`, as Hugging
    # Face decoders iterate): `layers.slice(None, 2, None)._modules.1` is
    # `layers.1` (start + i * step)
    expr = re.sub(r"\.slice\((\w+), (\w+), (\w+)\)\._modules\.(\d+)", _sliced_block, expr)
    return expr.strip(".")


def _sliced_block(m) -> str:
    start = 0 if m.group(1) == "None" else int(m.group(1))
    step = 1 if m.group(3) == "None" else int(m.group(3))
    return f".{start + int(m.group(4)) * step}"


def _user_frame(node) -> str:
    """`file:line: code` of the innermost user frame that produced a node."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', trace)
    user = [f for f in frames if "/torch/" not in f[0]] or frames
    if not user:
        return "<unknown source>"
    path, line, func, code = user[-1]
    return f"{path}:{line} ({func}): {code.strip()}"


class _Unsupported(Exception):
    """One op the importer cannot map; collected, then reported together."""


@dataclass
class _Const:
    """A value computable at import time (no data or parameter reaches it)."""

    value: object  # torch.Tensor or Python scalar


# The names the handler modules (python/het/aten) use.
Const = _Const
Unsupported = _Unsupported


@dataclass
class _Ctx:
    lines: List[str] = field(default_factory=list)
    args: List[Argument] = field(default_factory=list)
    errors: List[tuple] = field(default_factory=list)  # (graph position, message)


class _Importer:
    def __init__(self, ep, module, loss, function, input_names):
        import torch

        self.torch = torch
        self.aten = torch.ops.aten
        self.ep = ep
        self.module = module
        self.loss = loss
        self.function = function
        self.graph = ep.graph
        self.ctx = _Ctx()
        self.values: Dict[object, object] = {}  # fx node -> Value | _Const | tuple
        self.const_args: Dict[int, tuple] = {}  # id(_Const) -> (_Const, Value)
        self.constants: Dict[str, np.ndarray] = {}
        self.params: Dict[str, np.ndarray] = {}
        self.state: Dict[str, np.ndarray] = {}  # mutated buffers by name
        self.used_names = set()
        self.layers = {}
        self.dropout_seed = 0  # every het.dropout's seed
        self.dropout_enabled = True  # False: dropout imports as the identity
        self.dropout_streams = -1  # the last stream handed to a dropout site
        self.low_formats = set()  # bf16 / fp16 values seen (imported as f32)
        self.order = {n: i for i, n in enumerate(self.graph.nodes)}
        self._assign_layers()
        self._classify_inputs(input_names)

    # ----------------------------------------------------------------- setup
    def _classify_inputs(self, input_names):
        from torch.export.graph_signature import InputKind

        sig = self.ep.graph_signature
        self.input_kind = {}
        state = self.ep.state_dict
        consts = getattr(self.ep, "constants", {}) or {}
        user = 0
        mutated = set(sig.buffers_to_mutate.values())
        for spec in sig.input_specs:
            name = spec.arg.name
            if spec.kind == InputKind.USER_INPUT:
                self.input_kind[name] = ("input", input_names[user])
                user += 1
            elif spec.kind == InputKind.PARAMETER:
                self.input_kind[name] = ("param", spec.target)
            elif spec.kind == InputKind.BUFFER and spec.target in mutated:
                self.input_kind[name] = ("state", spec.target)
            elif spec.kind == InputKind.BUFFER:
                value = state[spec.target] if spec.target in state else consts[spec.target]
                self.input_kind[name] = ("const", value)
            elif spec.kind in (InputKind.CONSTANT_TENSOR, getattr(InputKind, "CUSTOM_OBJ", None)):
                self.input_kind[name] = ("const", consts[spec.target])
            else:
                raise HetImportError(f"unsupported graph input kind {spec.kind} for {name}")
        self.state_dict = state

    def _unit_of(self, node) -> Optional[str]:
        """The module path that is one planner layer: the deepest module on
        the node's module path that still holds a whole block. Wrappers
        that contain a stack of blocks somewhere below (a model around its
        decoder, a Hugging Face `*ForCausalLM` around its `*Model`) are
        looked through; a stack (ModuleList/Sequential of modules with
        children) gives one layer per block."""
        stack = node.meta.get("nn_module_stack") or {}
        paths = []
        for _key, entry in stack.items():
            path = _fqn_from_source(entry[0]) if isinstance(entry, tuple) else ""
            if path:
                paths.append(path)
        if not paths:
            return None
        parts = paths[-1].split(".")
        module, unit = self.module, []
        for part in parts:
            try:
                child = module.get_submodule(part)
            except AttributeError:
                break
            unit.append(part)
            if self._is_stack(child):
                if len(unit) < len(parts):
                    unit.append(parts[len(unit)])  # the block
                break
            if not self._holds_stack(child):
                break
            module = child
        return ".".join(unit) if unit else parts[0]

    def _is_stack(self, module) -> bool:
        nn = self.torch.nn
        return isinstance(module, (nn.ModuleList, nn.Sequential)) and \
            any(len(list(c.children())) for c in module.children())

    def _holds_stack(self, module) -> bool:
        key = id(module)
        cache = self.__dict__.setdefault("_stack_cache", {})
        if key not in cache:
            cache[key] = any(self._is_stack(m) for m in module.modules() if m is not module)
        return cache[key]

    def _assign_layers(self):
        ids: Dict[str, int] = {}
        for node in self.graph.nodes:
            if node.op != "call_function":
                continue
            own = -1
            unit = self._unit_of(node)
            if unit is not None:
                if unit not in ids:
                    ids[unit] = len(ids)
                own = ids[unit]
            inherited = [self.layers.get(a, -1) for a in node.all_input_nodes]
            self.layers[node] = max([own] + inherited)
        self.num_units = max(len(ids), 1)

    def next_dropout_stream(self) -> int:
        """A new stream for each dropout site, in the order they are emitted."""
        self.dropout_streams += 1
        return self.dropout_streams

    def layer(self, node) -> int:
        return max(self.layers.get(node, 0), 0)

    # ------------------------------------------------------------- emission
    def fresh(self, hint: str) -> str:
        base = mlir.ssa_name(hint)
        name, i = base, 0
        while name in self.used_names:
            i += 1
            name = f"{base}_{i}"
        self.used_names.add(name)
        return name

    def emit(self, node, op_text: str, results: List[Value]):
        """Appends `results = op_text` with the node's het.layer merged in."""
        lhs = ", ".join(r.ref for r in results)
        self.ctx.lines.append(f"    {lhs} = {op_text}")

    def emit_in_layer_order(self, texts: List[str], layer: int):
        """Inserts lines (ops whose operands are arguments or these lines'
        own results) after the last op of a layer <= `layer`, so layer ids
        never decrease along the program even for an op emitted late (a
        batch counter, which only the buffer updates read)."""
        at = 0
        for i in range(len(self.ctx.lines) - 1, -1, -1):
            m = re.search(r"het\.layer = (\d+) : i64", self.ctx.lines[i])
            if m and int(m.group(1)) <= layer:
                at = i + 1
                break
        self.ctx.lines[at:at] = [f"    {t}" for t in texts]

    def op(self, node, name: str, operands: List[Value], attrs: Dict[str, str],
           result_shapes, result_elem=None, hint=None, type_style="in_out", result_elems=None):
        """Prints one het op in its custom assembly form (`result_elems`: an
        element type per result, where they differ)."""
        attrs = dict(attrs)
        attrs["het.layer"] = f"{self.layer(node)} : i64"
        attr_text = "{" + ", ".join(f"{k} = {v}" if v is not None else k
                                     for k, v in attrs.items()) + "}"
        elem = result_elem or (operands[0].elem if operands else "f32")
        hint = hint or node.name
        elems = result_elems or [elem] * len(result_shapes)
        results = [Value(self.fresh(hint if i == 0 else f"{hint}_{i}"), tuple(s), elems[i])
                   for i, s in enumerate(result_shapes)]
        ins = ", ".join(v.ref for v in operands)
        if type_style == "same":  # `: type($input)`
            types = operands[0].type
        elif type_style == "functional":  # `: functional-type($inputs, $result)`
            in_types = ", ".join(v.type for v in operands)
            types = f"({in_types}) -> {', '.join(r.type for r in results)}"
        else:
            in_types = ", ".join(v.type for v in operands)
            out_types = ", ".join(r.type for r in results)
            types = f"{in_types} -> {out_types}"
        self.emit(node, f"het.{name} {ins} {attr_text} : {types}", results)
        return results[0] if len(results) == 1 else tuple(results)

    def add_argument(self, hint, shape, elem, het_name, param=False, state=False) -> Value:
        v = Value(self.fresh(hint), tuple(shape), elem)
        self.ctx.args.append(Argument(v, het_name, param, state))
        return v

    def const_value(self, c, like: Optional[Value] = None, node=None) -> Value:
        """Materialises an import-time constant as a function argument."""
        torch = self.torch
        t = c.value
        if not isinstance(t, torch.Tensor):
            dtype = torch.float64 if like is None or like.elem == "f64" else torch.float32
            if like is not None and like.elem.startswith("i"):
                dtype = torch.int64
            t = torch.tensor(t, dtype=dtype)
        elif like is not None and like.elem in ("f32", "f64") and t.is_floating_point():
            t = t.to(torch.float64 if like.elem == "f64" else torch.float32)
        if isinstance(t, torch.Tensor) and t.dtype in (torch.bfloat16, torch.float16):
            self.element_type(t.dtype)  # recorded; numpy has no bf16
            t = t.float()
        # Keyed by the _Const object, which the dict keeps alive: a freed
        # object's id could be reused by a different constant.
        key = id(c)
        if key not in self.const_args:
            name = f"const.{len(self.constants)}"
            arr = t.detach().cpu().numpy()
            self.constants[name] = arr
            arg = self.add_argument("const" + str(len(self.constants) - 1), arr.shape,
                                    mlir.element_type(arr.dtype), name)
            self.const_args[key] = (c, arg)
        return self.const_args[key][1]

    def tensor(self, arg, like: Optional[Value] = None) -> Value:
        """The het value of an fx argument (emitting it first if needed)."""
        v = self.get(arg) if hasattr(arg, "op") else _Const(arg)
        if isinstance(v, _Const):
            return self.const_value(v, like)
        if not isinstance(v, Value):
            raise _Unsupported(f"{arg} is not a tensor")
        return v

    def get(self, node):
        if node in self.values:
            return self.values[node]
        if node.op == "placeholder":
            v = self.placeholder(node)
        elif node.op == "call_function":
            if self._is_const(node):
                v = _Const(self._evaluate(node))
            else:
                try:
                    v = self.call(node)
                except _Unsupported as e:
                    self.ctx.errors.append((self.order[node],
                                            f"  {self._describe(node)}: {e}\n      at {_user_frame(node)}"))
                    v = self._poison(node)
                    self.values[node] = v
                    # Keep walking upstream so that every unsupported op is reported.
                    for a in node.all_input_nodes:
                        self.get(a)
        else:
            raise HetImportError(f"unexpected fx node {node.op} {node.name}")
        self.values[node] = v
        return v

    def _describe(self, node) -> str:
        target = node.target
        return getattr(target, "__name__", str(target)) if not hasattr(target, "_schema") \
            else str(target).replace("aten.", "aten::", 1)

    def _poison(self, node):
        """A stand-in with the node's shape so the walk goes on to find more errors."""
        val = node.meta.get("val")
        if isinstance(val, (tuple, list)):
            return tuple(self._fake_value(node, x) for x in val)
        return self._fake_value(node, val)

    def _fake_value(self, node, val):
        shape = tuple(getattr(val, "shape", ()))
        dtype = getattr(val, "dtype", None)
        try:
            elem = self.element_type(dtype) if dtype is not None else "f32"
        except ValueError:
            elem = "f32"
        return Value(self.fresh(node.name + "_unsupported"), shape, elem)

    def element_type(self, dtype) -> str:
        """The het element type a value of `dtype` is imported as: bf16 and
        f16 as f32, recording the format (a model under torch.autocast or in
        bf16 trains in it by het's autocast policy, with f32 master
        weights: `het.precision` on the function)."""
        elem = mlir.element_type(dtype)
        if elem in ("bf16", "f16"):
            self.low_formats.add("bf16" if elem == "bf16" else "fp16")
            return "f32"
        return elem

    def placeholder(self, node):
        kind, info = self.input_kind[node.name]
        if kind == "const":
            return _Const(info)
        val = node.meta["val"]
        elem = self.element_type(val.dtype)
        if kind == "input":
            return self.add_argument(info, val.shape, elem, info)
        if kind == "state":
            self.state[info] = self.state_dict[info].detach().cpu().numpy().copy()
            return self.add_argument("s_" + info, val.shape, elem, info, state=True)
        # parameter: a tied weight is named by its first name in
        # named_parameters() (e.g. "embed.weight", not "head.weight").
        everything = dict(self.module.named_parameters(remove_duplicate=False))
        param = everything[info] if info in everything else self.state_dict[info]
        canonical = {id(p): n for n, p in reversed(list(everything.items()))}
        name = canonical.get(id(param), info)
        self.params[name] = param.detach().cpu().numpy().copy()
        arg = self.add_argument("p_" + name, val.shape, elem, name, param=True)
        return arg

    def param_slice(self, node, name: str, begin: int, end: int) -> Value:
        """A parameter argument holding rows [begin, end) of a parameter."""
        everything = dict(self.module.named_parameters(remove_duplicate=False))
        param = everything[name] if name in everything else self.state_dict[name]
        key = f"{name}[{begin}:{end}]"
        value = param.detach().cpu().numpy()[begin:end].copy()
        self.params[key] = value
        elem = self.element_type(param.dtype)
        return self.add_argument(f"p_{name}_{begin}_{end}", value.shape, elem, key, param=True)

    def constant(self, arg):
        """The value of an fx argument (a node or a Python scalar) when it is
        a constant, else None; emits nothing for a non-constant node (pattern
        handlers ask before deciding what to emit)."""
        if not hasattr(arg, "op"):
            return arg
        if arg.op == "placeholder":
            if self.input_kind[arg.name][0] != "const":
                return None
        elif arg.op != "call_function" or not self._is_const(arg):
            return None
        c = self.get(arg)
        return c.value if isinstance(c, _Const) else None

    def _is_const(self, node) -> bool:
        if node in self.values:
            return isinstance(self.values[node], _Const)
        for a in node.all_input_nodes:
            if a.op == "placeholder":
                if self.input_kind[a.name][0] != "const":
                    return False
            elif not self._is_const(a):
                return False
        # random ops are not constants
        name = str(node.target)
        return "rand" not in name and "dropout" not in name

    def _evaluate(self, node):
        torch = self.torch

        def conv(a):
            if hasattr(a, "op"):
                return self.get(a).value
            if isinstance(a, (list, tuple)):
                return type(a)(conv(x) for x in a)
            return a

        args = conv(node.args)
        kwargs = {k: conv(v) for k, v in node.kwargs.items()}
        if "device" in kwargs:
            kwargs["device"] = torch.device("cpu")
        with torch.no_grad():
            return node.target(*args, **kwargs)

    # --------------------------------------------------------------- mapping
    def call(self, node):
        target = node.target
        if target is operator.getitem:
            base = self.get(node.args[0])
            if isinstance(base, tuple):
                item = base[node.args[1]]
                if item is None:
                    raise _Unsupported(f"result {node.args[1]} of {node.args[0].target} is not supported")
                return item
            raise _Unsupported("getitem on a tensor")
        handler = _HANDLERS.get(target)
        if handler is None:
            raise _Unsupported("no het mapping")
        return handler(self, node)

    def shape_of(self, node):
        return tuple(node.meta["val"].shape)

    def elem_of(self, node):
        return self.element_type(node.meta["val"].dtype)

    def reshape(self, node, x: Value, shape) -> Value:
        shape = tuple(int(s) for s in shape)
        if tuple(x.shape) == shape:
            return x
        return self.op(node, "reshape", [x], {}, [shape], hint=node.name)

    def run(self):
        """Emits everything the model's output depends on; returns (node, value)."""
        from torch.export.graph_signature import OutputKind

        user_outputs = [spec.arg.name for spec in self.ep.graph_signature.output_specs
                        if spec.kind == OutputKind.USER_OUTPUT]
        by_name = {n.name: n for n in self.graph.nodes}
        if len(user_outputs) != 1:
            raise HetImportError(
                f"the model must return one tensor (the logits, or the loss with loss='none'); "
                f"it returns {len(user_outputs)} outputs")
        result_node = by_name[user_outputs[0]]
        result = self.get(result_node)
        # The buffers the forward pass updates (BatchNorm's running
        # statistics), in the order PyTorch lists them: extra results named
        # like their state arguments, which runners feed back.
        self.state_updates = []
        for spec in self.ep.graph_signature.output_specs:
            if spec.kind == OutputKind.BUFFER_MUTATION:
                self.state_updates.append((spec.target, by_name[spec.arg.name]))
            elif spec.kind != OutputKind.USER_OUTPUT:
                raise HetImportError(f"the model's graph has an output of kind {spec.kind.name} "
                                     f"({spec.arg.name}); het maps user outputs and buffer updates")
        self.state_updates = [(name, node, self.get(node)) for name, node in self.state_updates]
        return result_node, result


# ------------------------------------------------------------------ handlers
_HANDLERS = {}


def _setup_handlers():
    if _HANDLERS:
        return
    import torch

    aten = torch.ops.aten

    def reg(ops, fn):
        for op in ops:
            if op is not None:
                _HANDLERS[op] = fn

    def ov(packet, name):
        return getattr(packet, name, None)

    from .aten import attention, conv, dense, losses, moe, norm, pointwise, reduce as reductions, shape

    pointwise_ops = pointwise.register(reg, aten)
    shape_ops = shape.register(reg, aten)
    reductions.register(reg, aten)

    # --- layout and identities ---------------------------------------------
    def identity(im, node):
        return im.get(node.args[0])

    reg([aten.clone.default, aten.alias.default, aten.detach.default,
         aten.lift_fresh_copy.default, ov(aten.contiguous, "default")], identity)

    def to_copy(im, node):
        source = im.get(node.args[0])
        if isinstance(source, pointwise.Predicate) and im.elem_of(node).startswith(("f", "b")):
            # a comparison used as a 0/1 mask
            return pointwise_ops["where"](im, node, condition=source)
        x = im.tensor(node.args[0])
        if im.elem_of(node) != x.elem:
            raise _Unsupported(f"dtype conversion {x.elem} -> {im.elem_of(node)}")
        return x

    reg([aten._to_copy.default], to_copy)

    def view(im, node):
        x = im.tensor(node.args[0])
        return im.reshape(node, x, im.shape_of(node))

    reg([aten.view.default, aten._unsafe_view.default, aten.reshape.default,
         aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.default,
         ov(aten.squeeze, "dims"), aten.flatten.using_ints], view)

    def as_strided(im, node):
        # Decompositions restride a result in place of a view (ConvNeXt's
        # pooled [N, C, 1, 1] after its channels-last blocks). het tensors
        # have no strides: only a restride that reads a row-major input in
        # row-major order, i.e. a reshape, has a meaning here.
        source, size, stride = node.args[0], list(node.args[1]), list(node.args[2])
        offset = node.args[3] if len(node.args) > 3 else node.kwargs.get("storage_offset", 0)
        val = source.meta.get("val") if hasattr(source, "meta") else None
        if val is None or not val.is_contiguous():
            raise _Unsupported("as_strided of a tensor that is not contiguous (a view of another "
                               "layout): het tensors are row-major values without strides")
        row_major, step = [], 1
        for extent in reversed(size):
            row_major.insert(0, step)
            step *= extent
        if (offset or 0) != 0 or step != val.numel() or \
                any(e > 1 and s != r for e, s, r in zip(size, stride, row_major)):
            raise _Unsupported(f"as_strided to size {size}, stride {stride}, offset {offset or 0}: "
                               f"only a restride that reads its input in row-major order (a reshape) "
                               f"has a het mapping")
        return im.reshape(node, im.tensor(source), im.shape_of(node))

    reg([aten.as_strided.default], as_strided)

    def permute(im, node):
        x = im.tensor(node.args[0])
        perm = [d % len(x.shape) for d in node.args[1]]
        if perm == list(range(len(perm))):
            return x
        return im.op(node, "transpose", [x], {"permutation": mlir.int_array(perm)},
                     [im.shape_of(node)])

    reg([aten.permute.default], permute)

    def transpose_int(im, node):
        x = im.tensor(node.args[0])
        r = len(x.shape)
        perm = list(range(r))
        a, b = node.args[1] % r, node.args[2] % r
        perm[a], perm[b] = perm[b], perm[a]
        return im.op(node, "transpose", [x], {"permutation": mlir.int_array(perm)},
                     [im.shape_of(node)])

    reg([aten.transpose.int], transpose_int)

    def t(im, node):
        x = im.tensor(node.args[0])
        if len(x.shape) < 2:
            return x
        return im.op(node, "transpose", [x], {"permutation": mlir.int_array([1, 0])},
                     [im.shape_of(node)])

    reg([aten.t.default], t)

    def expand(im, node):
        x = im.tensor(node.args[0])
        shape = im.shape_of(node)
        if tuple(x.shape) == shape:
            return x
        return im.op(node, "broadcast_to", [x], {}, [shape])

    reg([aten.expand.default], expand)


    dense.register(reg, aten, split_pieces=shape_ops["split"])

    # --- element-wise --------------------------------------------------------
    def binary(name):
        def handler(im, node):
            lhs, rhs = node.args[0], node.args[1]
            alpha = node.kwargs.get("alpha", 1)
            if alpha != 1:
                raise _Unsupported(f"{name} with alpha={alpha}")
            if not hasattr(lhs, "op") or isinstance(im.get(lhs), _Const):
                # constant on the left: keep the order (sub is not commutative)
                b = im.tensor(rhs)
                a = im.tensor(lhs, like=b)
            else:
                a = im.tensor(lhs)
                b = im.tensor(rhs, like=a)
            if name == "add" and a.elem == b.elem == "i64" and a.shape == b.shape == im.shape_of(node):
                return integer_add(im, node, a, b)
            if a.elem != b.elem or not a.elem.startswith(("f", "b")):
                raise _Unsupported(f"het.{name} needs two float tensors of one type, got {a.elem} and {b.elem}")
            return im.op(node, name, [a, b], {}, [im.shape_of(node)])

        def integer_add(im, node, a, b):
            # A counter (BatchNorm's num_batches_tracked): arith on tensors,
            # as het-autodiff counts Adam's steps; an import-time constant
            # operand becomes an arith.constant rather than an argument.
            operands, lines = [], []
            for v, arg in ((a, node.args[0]), (b, node.args[1])):
                const = None if hasattr(arg, "op") and not isinstance(im.get(arg), _Const) else \
                    (arg if not hasattr(arg, "op") else im.get(arg).value)
                if const is not None and getattr(const, "numel", lambda: 1)() == 1:
                    c = Value(im.fresh(node.name + "_one"), v.shape, "i64")
                    lines.append(f"{c.ref} = arith.constant dense<{int(const)}> : {c.type}")
                    v = c
                operands.append(v)
            out = Value(im.fresh(node.name), a.shape, "i64")
            lines.append(f"{out.ref} = arith.addi {operands[0].ref}, {operands[1].ref} "
                         f"{{het.layer = {im.layer(node)} : i64}} : {out.type}")
            if all(not hasattr(arg, "op") or arg.op == "placeholder" or isinstance(im.get(arg), _Const)
                   for arg in node.args[:2]):
                im.emit_in_layer_order(lines, im.layer(node))  # a counter of arguments
            else:
                im.ctx.lines.extend(f"    {t}" for t in lines)
            return out

        return handler

    reg([aten.add.Tensor, aten.add.Scalar], binary("add"))
    reg([aten.sub.Tensor, aten.sub.Scalar], binary("sub"))
    reg([aten.mul.Tensor, aten.mul.Scalar], binary("mul"))
    norm.register(reg, aten, mul=binary("mul"))  # mul.Tensor: RMS norms end in one

    losses.register(reg, aten, div_elementwise=pointwise_ops["div"])

    def relu(im, node):
        return im.op(node, "relu", [im.tensor(node.args[0])], {}, [im.shape_of(node)],
                     type_style="same")

    reg([aten.relu.default], relu)

    def gelu(im, node):
        approx = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
        attrs = {}
        if approx == "tanh":
            attrs["approximate"] = "#het.gelu_approximation<tanh>"
        elif approx != "none":
            raise _Unsupported(f"gelu approximate={approx!r}")
        return im.op(node, "gelu", [im.tensor(node.args[0])], attrs, [im.shape_of(node)],
                     type_style="same")

    reg([aten.gelu.default], gelu)

    def dropout(im, node):
        p = node.args[1] if len(node.args) > 1 else node.kwargs.get("p", 0.5)
        train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train", True)
        x = im.tensor(node.args[0])
        if p != 0 and train and im.dropout_enabled:
            if not 0 < p < 1:
                raise _Unsupported(f"dropout with p={p} (het.dropout takes 0 < p < 1)")
            # het.dropout: counter-based masks (seed, one stream per site)
            attrs = {"p": mlir.float_attr(p), "seed": f"{im.dropout_seed} : i64",
                     "stream": f"{im.next_dropout_stream()} : i64"}
            x = im.op(node, "dropout", [x], attrs, [tuple(x.shape)], type_style="same")
        return (x, None) if node.target is aten.native_dropout.default else x

    reg([aten.native_dropout.default, aten.dropout.default], dropout)

    attention.register(reg, aten, where_elementwise=pointwise_ops["where"])

    conv.register(reg, aten)
    reductions.register_mean_sum(reg, aten)
    norm.register_batch_and_layer_norm(reg, aten)
    moe.register(reg, torch)



class _SimpleNode:
    """Stand-in node used to attach a layer to ops the importer adds itself."""

    def __init__(self, name, layer):
        self.name = name
        self.meta = {}
        self._layer = layer


def _prepare_module(module):
    import torch

    if not isinstance(module, torch.nn.Module):
        raise HetImportError(f"expected a torch.nn.Module, got {type(module).__name__}")
    return module


_FORMATS = {"bfloat16": "bf16", "float16": "fp16"}


def _low_precision(module, example_inputs, target):
    """A model in bf16 or f16 (`.to(torch.bfloat16)`) imports as its f32 copy
    -- the values are exact in f32, they become the f32 master weights --
    and trains in its format by het's autocast policy. Returns the module,
    inputs and target to import, and the formats found (parameters, buffers,
    and an autocast region the import runs in, which torch.export drops)."""
    import copy

    import torch

    formats = set()
    tensors = list(module.parameters()) + list(module.buffers())
    low = {t.dtype for t in tensors if t.dtype in (torch.bfloat16, torch.float16)}
    formats |= {_FORMATS[str(d).replace("torch.", "")] for d in low}
    if low:
        module = copy.deepcopy(module).to(torch.float32)
    widen = lambda t: t.float() if t is not None and t.dtype in (torch.bfloat16, torch.float16) \
        else t
    if any(x.dtype in (torch.bfloat16, torch.float16) for x in example_inputs):
        formats |= {_FORMATS[str(x.dtype).replace("torch.", "")] for x in example_inputs
                    if x.dtype in (torch.bfloat16, torch.float16)}
    example_inputs = tuple(widen(x) for x in example_inputs)
    target = widen(target)
    if torch.is_autocast_enabled("cpu"):
        formats.add(_FORMATS.get(str(torch.get_autocast_dtype("cpu")).replace("torch.", ""),
                                 "bf16"))
    return module, example_inputs, target, formats


def _check_batch_norms(module):
    """A BatchNorm with momentum=None keeps a cumulative average whose factor
    (1 / batches seen) torch.export cannot trace; say so by module name
    rather than with torch's data-dependent-expression error."""
    import torch

    for name, m in module.named_modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.track_running_stats \
                and m.momentum is None:
            raise HetImportError(
                f"{name or type(m).__name__}: BatchNorm with momentum=None keeps a cumulative "
                f"average of its statistics, which het cannot trace; set a momentum (PyTorch's "
                f"default is 0.1) or track_running_stats=False")


def from_torch(module, example_inputs, loss: str = "cross_entropy", target=None,
               function: str = "forward", params_path=None, input_names=None,
               dropout_seed: int = 0, dropout: bool = True, training: bool = True,
               precision: Optional[str] = None, moe_capacity_factor=None) -> HetProgram:
    """Imports a PyTorch module as a het training graph.

    module          a torch.nn.Module; traced in training mode (BatchNorm uses
                    batch statistics and updates its running statistics, which
                    become `het.state` arguments and extra results), whatever
                    mode the module is in
    example_inputs  a tensor or tuple of tensors: the forward's arguments
    loss            "cross_entropy" (the model returns logits [..., C]; target
                    holds class indices [...]), "mse" (target has the output's
                    shape), or "none" (the model itself returns the 0-d loss)
    target          example target tensor; required unless loss == "none"
    function        name of the emitted func.func
    params_path     if given, writes parameters and constants there (.npz)
    input_names     het.name of each data input (default "input", or the
                    forward's argument names when there are several)
    dropout_seed    the seed of every het.dropout (each dropout site gets its
                    own stream; masks then depend on the step and sample)
    dropout         False imports every dropout as the identity (to compare
                    with PyTorch under het.compat.without_dropout)
    training        False traces in eval mode (model.eval()): BatchNorm
                    normalizes with its running statistics, as constants
    precision       "bf16" or "fp16": train in it by het's autocast policy
                    (PyTorch's), stated as `het.precision` on the function,
                    which het-compile follows. Default: the model's own -- a
                    model in bf16/f16 (`.to(torch.bfloat16)`), with autocast
                    regions in its forward, or imported inside
                    `torch.autocast` imports as f32 (its values exactly)
                    and states that format; "fp32" states none.

    moe_capacity_factor
                    rows per expert of a sparse mixture-of-experts block
                    (transformers' Mixtral, Qwen2-MoE): ceil(factor * T * k / E)
                    as GShard sizes them, choices past it dropped. Default
                    None: T rows, nothing dropped (the blocks' own values)

    Returns a HetProgram (the MLIR text, with .params, .constants, .save()).
    Raises HetImportError, listing every unsupported op with its source line.
    """
    import torch

    _setup_handlers()
    module = _prepare_module(module)
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    for i, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            raise HetImportError(f"example input {i} is a {type(x).__name__}, expected a torch.Tensor")
    if loss not in LOSSES:
        raise HetImportError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
    if loss != "none" and target is None:
        raise HetImportError(f"loss={loss!r} needs an example target tensor")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", function):
        raise HetImportError(f"invalid function name {function!r}")
    if precision not in (None, "fp32", "bf16", "fp16"):
        raise HetImportError(f"unknown precision {precision!r}; choose fp32, bf16 or fp16")
    module, example_inputs, target, formats = _low_precision(module, example_inputs, target)

    if training:
        _check_batch_norms(module)
    # training mode, het.compat's fixes for third-party models, core ATen
    ep = capture(module, example_inputs, training=training, moe_capacity_factor=moe_capacity_factor)
    if moe_capacity_factor is not None and not any(
            str(n.target) == "het.moe_dispatch.default" for n in ep.graph.nodes):
        raise HetImportError(f"moe_capacity_factor={moe_capacity_factor} given, but the model has no "
                             f"mixture-of-experts block het imports (transformers' Mixtral or "
                             f"Qwen2-MoE sparse blocks, or torch.ops.het.moe_dispatch)")

    user_specs = [s for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    if input_names is None:
        input_names = ["input"] if len(user_specs) == 1 else [s.arg.name for s in user_specs]
    if len(input_names) != len(user_specs):
        raise HetImportError(f"{len(input_names)} input names for {len(user_specs)} inputs")

    im = _Importer(ep, module, loss, function, list(input_names))
    im.dropout_seed = int(dropout_seed)
    im.dropout_enabled = bool(dropout)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 20000))
    try:
        out_node, out = im.run()
    finally:
        sys.setrecursionlimit(old_limit)
    if im.ctx.errors:
        errors = [text for _, text in sorted(im.ctx.errors)]
        raise HetImportError(
            f"{len(errors)} PyTorch op(s) have no het mapping (nothing was dropped; "
            f"rewrite these or extend het):\n" + "\n".join(errors),
            unsupported=errors)
    if isinstance(out, tuple) or isinstance(out, _Const):
        raise HetImportError("the model's output is not a computed tensor")
    formats |= im.low_formats
    if precision is None and len(formats) > 1:
        raise HetImportError(f"the model computes in both {' and '.join(sorted(formats))}; het "
                             f"trains a model in one (pass precision='bf16' or 'fp16')")
    stated = precision if precision is not None else (formats.pop() if formats else "fp32")

    layer = im.layer(out_node)
    tail = _SimpleNode("loss", layer)
    im.layers[tail] = layer
    if loss == "cross_entropy":
        if out.elem not in ("f32", "f64", "f16", "bf16") or len(out.shape) < 1:
            raise HetImportError(f"cross_entropy needs float logits [..., C], the model returns {out.type}")
        if tuple(target.shape) != tuple(out.shape[:-1]) or target.dtype not in (torch.int64, torch.int32):
            raise HetImportError(
                f"cross_entropy target must be int64 class indices of shape {list(out.shape[:-1])}, "
                f"got {target.dtype} {list(target.shape)}")
        labels = im.add_argument("target", target.shape, mlir.element_type(target.dtype), "target")
        loss_v = im.op(tail, "cross_entropy", [out, labels], {}, [()], hint="loss")
    elif loss == "mse":
        if tuple(target.shape) != tuple(out.shape) or not target.is_floating_point():
            raise HetImportError(f"mse target must be a float tensor of shape {list(out.shape)}, "
                                 f"got {target.dtype} {list(target.shape)}")
        tgt = im.add_argument("target", target.shape, out.elem, "target")
        diff = im.op(tail, "sub", [out, tgt], {}, [out.shape], hint="diff")
        sq = im.op(tail, "mul", [diff, diff], {}, [out.shape], hint="sq")
        loss_v = im.op(tail, "reduce_mean", [sq], {"axes": mlir.int_array(range(len(out.shape)))},
                       [()], hint="loss")
    else:
        if out.shape != ():
            raise HetImportError(f"loss='none' needs the model to return a 0-d loss, it returns {out.type}")
        loss_v = out

    # Arguments: data inputs, target, parameters (module order), state,
    # constants.
    order = {"input": 0, "target": 1, "param": 2, "state": 3, "const": 4}

    def arg_rank(a):
        if a.param:
            return order["param"]
        if a.state:
            return order["state"]
        if a.het_name == "target":
            return order["target"]
        if a.het_name.startswith("const."):
            return order["const"]
        return order["input"]

    input_rank = {n: i for i, n in enumerate(input_names)}
    param_rank = {n: i for i, (n, _) in enumerate(module.named_parameters(remove_duplicate=False))}
    param_rank.update({n: i for i, (n, _) in enumerate(module.named_buffers(remove_duplicate=False))})

    def param_order(name):
        # "w[32:64]" (a row slice, see split_linear) sorts with w, by its first row
        m = re.fullmatch(r"(.*)\[(\d+):(\d+)\]", name)
        return (param_rank.get(m.group(1), 0), int(m.group(2))) if m else (param_rank.get(name, 0), 0)

    args = sorted(im.ctx.args, key=lambda a: (arg_rank(a), input_rank.get(a.het_name, 0),
                                              param_order(a.het_name),
                                              int(a.het_name[6:]) if a.het_name.startswith("const.") else 0))
    arg_text = []
    for a in args:
        attrs = ("het.param, " if a.param else "") + ("het.state, " if a.state else "") + \
            f"het.name = {mlir.string_attr(a.het_name)}"
        arg_text.append(f"{a.value.ref}: {a.value.type} {{{attrs}}}")
    state_args = {a.het_name: a.value for a in args if a.state}
    results = [(loss_v, "")]
    for name, node, value in im.state_updates:
        if not isinstance(value, Value):
            raise HetImportError(f"het does not compute the update of buffer {name!r} "
                                 f"(made by {node.name}); it can only keep buffers it updates")
        if name not in state_args:  # overwritten without being read: read it as state too
            raise HetImportError(f"buffer {name!r} is updated but never read by the model")
        if value.type != state_args[name].type:
            raise HetImportError(f"buffer {name!r} is {state_args[name].type}, its update "
                                 f"{value.type}")
        results.append((value, f" {{het.name = {mlir.string_attr(name)}}}"))
    result_types = ", ".join(v.type + attrs for v, attrs in results)
    if len(results) == 1:
        result_types = loss_v.type
    else:
        result_types = f"({result_types})"
    marker = "" if stated == "fp32" else \
        f" attributes {{het.precision = {mlir.string_attr(stated)}}}"
    header = f"func.func @{function}(\n    " + ",\n    ".join(arg_text) + \
        f")\n    -> {result_types}{marker} {{"
    body = "\n".join(im.ctx.lines)
    source = getattr(type(module), "__qualname__", type(module).__name__)
    text = (f"// Imported from PyTorch ({source}) by het.from_torch; loss = {loss}.\n"
            f"{header}\n{body}\n    return {', '.join(v.ref for v, _ in results)} : "
            f"{', '.join(v.type for v, _ in results)}\n}}\n")

    prog = HetProgram(text)
    prog.params = {a.het_name: im.params[a.het_name] for a in args if a.param}
    prog.state = {a.het_name: im.state[a.het_name] for a in args if a.state}
    prog.constants = dict(im.constants)
    prog.input_names = [a.het_name for a in args
                        if not a.param and not a.state and not a.het_name.startswith("const.")]
    prog.function = function
    prog.precision = stated
    prog.num_layers = max(im.layers.values(), default=0) + 1
    if params_path is not None:
        np.savez(params_path, **prog.initial_values())
    return prog
