"""Small helpers for writing het-dialect MLIR text.

The importer prints MLIR directly (no MLIR Python bindings are needed): the
syntax is the one in docs/Dialects/HetDialect.md, and het-opt verifies it.
"""

import math
import re

# torch / numpy dtype names -> MLIR element types.
_ELEMENT_TYPES = {
    "float32": "f32",
    "float64": "f64",
    "float16": "f16",
    "bfloat16": "bf16",
    "int64": "i64",
    "int32": "i32",
    "bool": "i1",
}


def element_type(dtype) -> str:
    """MLIR element type of a torch or numpy dtype."""
    name = str(dtype).replace("torch.", "")
    if name not in _ELEMENT_TYPES:
        raise ValueError(f"het has no element type for dtype {dtype}")
    return _ELEMENT_TYPES[name]


def tensor_type(shape, elem: str) -> str:
    """`tensor<4x16xf32>`; a 0-d tensor is `tensor<f32>`."""
    dims = "".join(f"{int(d)}x" for d in shape)
    return f"tensor<{dims}{elem}>"


def float_attr(value: float) -> str:
    """An f64 attribute. MLIR float literals need a '.', so 1e-05 -> 1.0e-05."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"het attributes must be finite, got {value}")
    text = repr(value)
    if "." not in text:
        text = text.replace("e", ".0e") if "e" in text else text + ".0"
    return f"{text} : f64"


def scalar_literal(value: float, elem: str) -> str:
    """`arith.constant` text of a float scalar of element type `elem`:
    decimal with a '.', or the bit pattern for infinities and NaN."""
    import struct

    value = float(value)
    if math.isfinite(value):
        text = repr(value)
        if "." not in text:
            text = text.replace("e", ".0e") if "e" in text else text + ".0"
        return f"{text} : {elem}"
    if elem == "f64":
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        return f"0x{bits:016X} : f64"
    if elem == "f32":
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        return f"0x{bits:08X} : f32"
    raise ValueError(f"no non-finite literal for {elem}")


def int_array(values) -> str:
    return "array<i64: " + ", ".join(str(int(v)) for v in values) + ">"


def string_attr(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


_SSA_BAD = re.compile(r"[^A-Za-z0-9_$.-]")


def ssa_name(hint: str) -> str:
    """A valid SSA name (without the %) built from a hint."""
    name = _SSA_BAD.sub("_", hint)
    if not name or name[0].isdigit():
        name = "v" + name
    return name
