"""How ATen ops become het ops, one module per family.

Each module has `register(reg, aten)`: `reg(ops, handler)` maps ATen
overloads to a handler `handler(importer, node) -> Value`, called when the
importer reaches the node (python/het/importer.py). A handler raises
`Unsupported` with a reason for uses het cannot express; the importer
collects every such reason before failing.
"""


def calls(node, *targets):
    """Whether fx `node` is a call of one of the ATen `targets` (patterns
    that fold several nodes into one het op look upstream with it)."""
    return hasattr(node, "op") and node.op == "call_function" and node.target in targets
