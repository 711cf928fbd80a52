"""Checks `python -m het.export --check` runs besides the loss trace.

`dropout_statistics`: het's dropout masks are its own (Philox, counter
based), not torch's generator's, so a model with dropout is compared with
PyTorch with dropout off, and its dropout sites are checked here for what
they promise: the fraction kept is 1 - p (within 5 standard deviations over
many elements) and every kept element is scaled by exactly 1/(1-p).

`state_difference`: the buffers het's training updates (BatchNorm's running
statistics and batch counters) against the same buffers of the PyTorch run.
"""

import re
from typing import Dict, List, Tuple

import numpy as np

from . import tools

_DROPOUT = re.compile(r"het\.dropout\s+%[\w$.-]+\s+\{([^}]*)\}")


def dropout_sites(program: str) -> List[dict]:
    """p, seed and stream of every het.dropout in the program text."""
    sites = []
    for attrs in _DROPOUT.findall(str(program)):
        fields = dict(re.findall(r"(\w+) = ([-\d.eE+]+)", attrs))
        sites.append({"p": float(fields["p"]), "seed": int(fields["seed"]),
                      "stream": int(fields["stream"])})
    return sites


def dropout_statistics(program: str, elements: int = 1 << 16, steps: int = 2) -> List[str]:
    """Runs each dropout site of `program` on ones (het-eval, `steps`
    training steps apart) and checks the kept fraction and the scale.
    Returns one line per site and step; raises HetToolError on a failure."""
    lines = []
    for site in dropout_sites(program):
        p = site["p"]
        text = (f"func.func @site(%x: tensor<{elements}xf32> {{het.name = \"x\"}}) -> tensor<{elements}xf32> {{\n"
                f"  %y = het.dropout %x {{p = {p!r} : f64, seed = {site['seed']} : i64, "
                f"stream = {site['stream']} : i64}} : tensor<{elements}xf32>\n"
                f"  return %y : tensor<{elements}xf32>\n}}\n")
        masks = []
        for step in range(steps):
            out = tools.evaluate(text, {"x": np.ones(elements, np.float32)}, function="site",
                                 step=step)
            y = np.asarray(out["result0"], np.float64)
            kept = y != 0
            fraction = kept.mean()
            sigma = (p * (1 - p) / elements) ** 0.5
            scale = np.float32(1.0 / (1.0 - p))
            line = (f"dropout stream {site['stream']} (p={p:g}) step {step}: kept {fraction:.4f} of "
                    f"{elements} (expected {1 - p:.4f} +- {5 * sigma:.4f}), kept values "
                    f"{'all' if np.all(y[kept] == scale) else 'NOT all'} {float(scale):.7g} = 1/(1-p)")
            lines.append(line)
            if abs(fraction - (1 - p)) > 5 * sigma or not np.all(y[kept] == scale):
                raise tools.HetToolError("dropout check failed: " + line)
            masks.append(kept)
        if steps > 1 and all(np.array_equal(masks[0], m) for m in masks[1:]):
            raise tools.HetToolError(f"dropout stream {site['stream']} draws the same mask every step")
    return lines


def state_difference(het_arrays: Dict[str, np.ndarray], module, names) -> Tuple[float, str]:
    """The largest difference between het's final value of each buffer in
    `names` and `module`'s, relative to the buffer's largest magnitude, and
    the buffer where it is. A running mean is measured against its layer's
    standard deviation too (sqrt of the running variance): a channel whose
    mean is zero in exact arithmetic (a bias-free 1x1 convolution of
    normalized values) holds only rounding, which is no scale. Integer
    buffers (batch counters) must be equal: any difference counts as 1."""
    buffers = dict(module.named_buffers())
    worst, where = 0.0, ""
    for name in names:
        if name not in het_arrays:
            raise tools.HetToolError(f"het's training run returned no value for buffer {name!r}")
        ours = np.asarray(het_arrays[name])
        theirs = buffers[name].detach().cpu().numpy()
        if ours.shape != theirs.shape:
            raise tools.HetToolError(f"buffer {name!r}: het's is {ours.shape}, PyTorch's {theirs.shape}")
        if np.issubdtype(theirs.dtype, np.integer):
            difference = 0.0 if np.array_equal(ours, theirs) else 1.0
        else:
            scale = max(float(np.max(np.abs(theirs))), 1e-30)
            variance = buffers.get(name[:-len("running_mean")] + "running_var") \
                if name.endswith("running_mean") else None
            if variance is not None:
                scale = max(scale, float(variance.detach().max()) ** 0.5)
            difference = float(np.max(np.abs(ours.astype(np.float64) - theirs))) / scale
        if difference >= worst:
            worst, where = difference, name
    return worst, where
