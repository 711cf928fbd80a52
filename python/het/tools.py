"""Thin wrappers around het's command-line tools.

Each wrapper runs one tool as a subprocess and loads what it wrote back into
numpy (`.npz`) or Python (plan JSON). Tools are found in `$HET_TOOLS_DIR`,
then in `$HET_PREFIX/bin` (an installed tree, `cmake --install`), then in
`<repo>/build/bin` when this package is used from its source tree, then on
`PATH`; a missing tool is a `HetToolError` that says where it looked.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from .errors import HetToolError

_REPO = Path(__file__).resolve().parents[2]


def _search_dirs() -> List[str]:
    dirs = []
    env = os.environ.get("HET_TOOLS_DIR")
    if env:
        dirs.append(env)
    prefix = os.environ.get("HET_PREFIX")
    if prefix:
        dirs.append(os.path.join(prefix, "bin"))
    # Only a source checkout has <repo>/build: an installed package (pip
    # install, a wheel) lives in site-packages and finds the tools on PATH.
    if (_REPO / "python" / "het").is_dir():
        dirs.append(str(_REPO / "build" / "bin"))
    return dirs


def find_tool(name: str) -> str:
    """Path of a het tool, or HetToolError saying where it looked."""
    for d in _search_dirs():
        path = os.path.join(d, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found:
        return found
    raise HetToolError(
        f"{name} not found in {', '.join(_search_dirs()) or 'no configured folder'} or on PATH "
        f"(build het with scripts/build.sh, or put an installed het's bin/ on PATH, or set "
        f"HET_PREFIX to its prefix or HET_TOOLS_DIR to its bin/)")


def has_tool(name: str) -> bool:
    try:
        find_tool(name)
        return True
    except HetToolError:
        return False


def run_tool(name: str, args: Sequence[str], timeout: float = 600, input_text=None) -> subprocess.CompletedProcess:
    """Runs a tool; a non-zero exit is a HetToolError carrying its stderr."""
    return _run(name, [find_tool(name)] + [str(a) for a in args], timeout, input_text)


def _run(name: str, cmd: List[str], timeout: float, input_text=None) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input_text)
    except subprocess.TimeoutExpired as e:
        raise HetToolError(f"{name} timed out after {timeout}s: {' '.join(cmd)}") from e
    if proc.returncode != 0:
        raise HetToolError(
            f"{name} failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr.strip()}",
            returncode=proc.returncode, stderr=proc.stderr)
    return proc


def _as_path(mlir, workdir: str, stem: str) -> str:
    """MLIR given as text or as a path -> a path."""
    text = str(mlir)
    if "\n" not in text and os.path.isfile(text):
        return text
    path = os.path.join(workdir, stem + ".mlir")
    with open(path, "w") as f:
        f.write(text)
    return path


def het_opt(mlir, passes: Sequence[str] = (), output: Optional[str] = None, timeout: float = 600) -> str:
    """Runs `het-opt [passes] FILE` and returns the printed MLIR (also written
    to `output` when given). `mlir` is MLIR text or a file path; passes are
    het-opt flags such as `--het-autodiff=optimizer=sgd learning-rate=0.1`."""
    with tempfile.TemporaryDirectory(prefix="het-opt-") as tmp:
        path = _as_path(mlir, tmp, "in")
        proc = run_tool("het-opt", list(passes) + [path], timeout=timeout)
    if output:
        with open(output, "w") as f:
            f.write(proc.stdout)
    return proc.stdout


def autodiff(mlir, optimizer: str = "sgd", learning_rate: float = 0.1, output: Optional[str] = None,
             fuse: bool = False, **options) -> str:
    """Adds `<func>_train_step` with `het-opt --het-autodiff` (options:
    momentum, weight_decay, nesterov, beta1, beta2, epsilon, decoupled).
    With fuse=True it runs `--het-training-pipeline` instead (autodiff,
    canonicalize, het-fuse, cse), the form code generation starts from."""
    opts = [f"optimizer={optimizer}"]
    if optimizer != "none":
        opts.append(f"learning-rate={learning_rate!r}")
    if fuse:
        opts.append("fuse")
    for key, value in options.items():
        text = str(value).lower() if isinstance(value, bool) else repr(value)
        opts.append(f"{key.replace('_', '-')}={text}")
    pass_name = "het-training-pipeline" if fuse else "het-autodiff"
    return het_opt(mlir, [f"--{pass_name}=" + " ".join(opts)], output=output)


_STEP_LINE = re.compile(r"^step\s+(\d+)\s+loss\s+(\S+)\s*$")


class EvalResult(dict):
    """het-eval's outputs (result het.name -> numpy array); `.losses` holds the
    per-step loss trace when it ran with steps, `.stdout` the raw output."""

    losses: List[float]
    stdout: str


def evaluate(mlir, inputs: Dict[str, np.ndarray], function: Optional[str] = None, steps: Optional[int] = None,
             precision: str = "f32", timeout: float = 600, step: int = 0) -> EvalResult:
    """Runs the reference evaluator `het-eval` on a function.

    inputs: argument het.name -> array (parameters, data, constants). Returns
    the results by het.name; with `steps`, the function runs that many times
    with each result fed back into the argument of the same name and
    `.losses` is the loss of every step. `step` is the training step the
    first run draws het.dropout's masks for.
    """
    if precision not in ("f32", "f64"):
        raise ValueError(f"precision must be f32 or f64, got {precision!r}")
    with tempfile.TemporaryDirectory(prefix="het-eval-") as tmp:
        path = _as_path(mlir, tmp, "program")
        in_npz = os.path.join(tmp, "inputs.npz")
        out_npz = os.path.join(tmp, "outputs.npz")
        np.savez(in_npz, **{k: np.asarray(v) for k, v in inputs.items()})
        args = [path, "--inputs", in_npz, "-o", out_npz, "--precision", precision]
        if function:
            args += ["--function", function]
        if steps is not None:
            args += ["--steps", str(int(steps))]
        if step:
            args += ["--first-step", str(int(step))]
        proc = run_tool("het-eval", args, timeout=timeout)
        result = EvalResult()
        if os.path.exists(out_npz):
            with np.load(out_npz) as data:
                for key in data.files:
                    result[key] = data[key]
    _read_losses(result, proc.stdout, "het-eval", steps)
    return result


def _read_losses(result: EvalResult, stdout: str, tool: str, steps: Optional[int]) -> None:
    """Sets `.stdout` and `.losses` (from the `step <i> loss <v>` lines het-eval
    and compiled executables print); with `steps`, one loss per step or a
    HetToolError."""
    result.stdout = stdout
    result.losses = [float(m.group(2)) for m in map(_STEP_LINE.match, stdout.splitlines()) if m]
    if steps is not None and len(result.losses) != steps:
        raise HetToolError(f"{tool} printed {len(result.losses)} step losses for --steps {steps}:\n"
                           f"{stdout[-2000:]}")


def train(mlir, inputs: Dict[str, np.ndarray], steps: int, function: Optional[str] = None,
          optimizer: str = "sgd", learning_rate: float = 0.1, runner: str = "eval",
          precision: str = "f32", fuse: bool = False, number_format: str = "fp32",
          **options) -> EvalResult:
    """Differentiates a forward function and runs `steps` training steps.

    runner="eval" uses the reference evaluator; "compile" compiles the same
    step with het-compile and runs the native executable (f32 only, see
    run_compiled). fuse=True trains the fused step (het-training-pipeline).
    number_format "bf16" or "fp16" trains in it (het-autocast, in the fused
    pipeline; fp16 with loss scaling as torch.amp.GradScaler); `precision`
    is the reference evaluator's arithmetic (f32 or f64).
    """
    if number_format not in ("fp32", "bf16", "fp16"):
        raise ValueError(f"number_format must be fp32, bf16 or fp16, got {number_format!r}")
    if number_format != "fp32":
        if runner == "compile":
            raise ValueError("runner='compile' trains in f32 only; compile with het-compile "
                             f"--precision {number_format}")
        options["precision"] = number_format  # het-training-pipeline's option
        fuse = True
    if runner not in ("eval", "compile"):
        raise ValueError(f"runner must be 'eval' or 'compile', got {runner!r}")
    if runner == "compile" and precision != "f32":
        raise ValueError(f"runner='compile' trains in f32 only (het-compile), got precision={precision!r}")
    train_mlir = autodiff(mlir, optimizer=optimizer, learning_rate=learning_rate, fuse=fuse, **options)
    if function is None:
        m = re.search(r"func\.func\s+@([\w$.]+)", str(mlir) if "\n" in str(mlir) else open(mlir).read())
        if not m:
            raise HetToolError("no func.func in the program")
        function = m.group(1)
    step_fn = function + "_train_step"
    if runner == "eval":
        return evaluate(train_mlir, inputs, function=step_fn, steps=steps, precision=precision)
    return run_compiled(train_mlir, inputs, function=step_fn, steps=steps)


def run_compiled(mlir, inputs: Dict[str, np.ndarray], function: Optional[str], steps: int,
                 threads: Optional[int] = 1, compile_args: Sequence[str] = (),
                 timeout: float = 600) -> EvalResult:
    """Compiles a training step with `het-compile` and runs the executable.

    mlir holds one `<model>_train_step` (from `autodiff`; `function`, when
    given, must name it) or a forward model, which het-compile differentiates
    itself (pass e.g. `compile_args=["--optimizer=adam", "--lr", "0.01"]`).
    inputs: argument het.name -> array, as for `evaluate`; the executable
    reads them with `--inputs`, so like het-eval only optimizer state may be
    left out (zeros). It runs `steps` steps on `threads` oneDNN threads (None:
    all cores). Returns what `evaluate(..., steps=steps)` returns: the trained
    parameters and optimizer state by het.name (the executable's `--save`),
    `loss` (the last step's), `.losses` and `.stdout`. f32 only.
    """
    text = str(mlir)
    if "\n" not in text and os.path.isfile(text):
        with open(text) as f:
            text = f.read()
    if function is not None:
        functions = re.findall(r"func\.func\s+(?:(?:public|private|nested)\s+)?@([\w$.]+)", text)
        if function not in functions:
            raise HetToolError(f"no function @{function} in the program "
                               f"(functions: {', '.join('@' + f for f in functions) or 'none'})")
        if not function.endswith("_train_step"):
            raise HetToolError(f"het-compile compiles a training step (@<model>_train_step, as "
                               f"het.autodiff makes it); @{function} is not one")
    with tempfile.TemporaryDirectory(prefix="het-compile-") as tmp:
        path = _as_path(mlir, tmp, "program")
        exe = os.path.join(tmp, "model")
        in_npz = os.path.join(tmp, "inputs.npz")
        out_npz = os.path.join(tmp, "trained.npz")
        run_tool("het-compile", [path, "-o", exe] + list(compile_args), timeout=timeout)
        np.savez(in_npz, **{k: np.asarray(v) for k, v in inputs.items()})
        # --inputs: like het-eval, an argument missing from `inputs` (other
        # than optimizer state) is an error, not a random initial value.
        cmd = [exe, "--steps", str(int(steps)), "--inputs", in_npz, "--save", out_npz]
        if threads is not None:
            cmd += ["--threads", str(int(threads))]
        proc = _run("the compiled model", cmd, timeout)
        result = EvalResult(load_npz(out_npz))
    _read_losses(result, proc.stdout, "the compiled model", steps)
    if result.losses:
        result["loss"] = np.asarray(result.losses[-1], dtype=np.float32)
    return result


def plan(model, cluster, extra_args: Sequence[str] = (), timeout: float = 600) -> dict:
    """Runs `het-plan --cluster CLUSTER --model MODEL --json [extra]` (the
    command line of issue 6) and returns the parsed JSON plan. `model` is MLIR
    text or a path; extra_args e.g. ["--global-batch", "256", "--top", "3"]."""
    with tempfile.TemporaryDirectory(prefix="het-plan-") as tmp:
        model_path = _as_path(model, tmp, "model")
        args = ["--cluster", str(cluster), "--model", model_path, "--json"] + list(extra_args)
        proc = run_tool("het-plan", args, timeout=timeout)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise HetToolError(f"het-plan did not print JSON: {e}\n{proc.stdout[:2000]}") from e


def load_npz(path) -> Dict[str, np.ndarray]:
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


_ROW_SLICE = re.compile(r"(.*)\[(\d+):(\d+)\]")


def to_torch(arrays: Dict[str, np.ndarray], module=None):
    """numpy results -> torch tensors; with a module, loads every array whose
    name is one of its parameters or buffers (BatchNorm's running statistics)
    into it (strict about shapes). A name `w[a:b]` (a parameter the importer
    split by rows) fills rows a..b of w."""
    import torch

    # np.array, not np.ascontiguousarray, which makes 0-d arrays 1-d
    tensors = {k: torch.from_numpy(np.array(v, order="C")) for k, v in arrays.items()}
    if module is not None:
        own = dict(module.named_parameters(remove_duplicate=False))
        own.update(module.named_buffers(remove_duplicate=False))
        with torch.no_grad():
            for name, t in tensors.items():
                target = own.get(name)
                m = _ROW_SLICE.fullmatch(name)
                if target is None and m and m.group(1) in own:
                    target = own[m.group(1)][int(m.group(2)):int(m.group(3))]
                if target is None:
                    continue
                if tuple(target.shape) != tuple(t.shape):
                    raise ValueError(f"{name}: shape {tuple(t.shape)} does not match the module's "
                                     f"{tuple(target.shape)}")
                target.copy_(t)
    return tensors
