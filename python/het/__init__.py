"""het: import PyTorch models into het and drive het's tools from Python.

    import het
    prog = het.from_torch(model, x, loss="cross_entropy", target=y)
    prog.save("model.mlir")                     # and model.npz (parameters)
    res = het.train(prog, {**prog.initial_values(), "input": x, "target": y}, steps=20)
    res.losses                                  # loss of every step

The importer needs torch; the tool wrappers and plots only need numpy
(and matplotlib for plots).
"""

from .errors import HetError, HetImportError, HetToolError
from .tools import (autodiff, evaluate, find_tool, has_tool, het_opt, load_npz, plan,
                    run_compiled, to_torch, train)

__version__ = "0.1.0"


def from_torch(module, example_inputs, loss="cross_entropy", target=None, **kwargs):
    """See het.importer.from_torch."""
    from .importer import from_torch as _from_torch

    return _from_torch(module, example_inputs, loss=loss, target=target, **kwargs)


__all__ = ["HetError", "HetImportError", "HetToolError", "autodiff", "evaluate", "find_tool",
           "from_torch", "has_tool", "het_opt", "load_npz", "plan", "run_compiled", "to_torch", "train"]
