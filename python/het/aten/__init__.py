"""How ATen ops become het ops, one module per family.

Each module has `register(reg, aten)`: `reg(ops, handler)` maps ATen
overloads to a handler `handler(importer, node) -> Value`, called when the
importer reaches the node (python/het/importer.py). A handler raises
`Unsupported` with a reason for uses het cannot express; the importer
collects every such reason before failing.
"""
