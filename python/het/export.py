"""Command line: import a PyTorch model file into het (and optionally train it).

    python -m het.export path/model.py:factory --input-shape 64,3,32,32 \\
        --loss cross_entropy -o out.mlir [--train-steps 20 --lr 0.1 [--check]]

`factory` is any callable in the file (a class or a function) that returns
the torch.nn.Module when called with no arguments. Writes

    out.mlir        the forward graph with the loss, in the het dialect
    out.npz         initial parameters (and constants), keyed by het.name
    out.data.npz    the example batch ("input"/"target"), random with --seed

With --train-steps N it also runs N optimizer steps on that batch
(het-opt --het-autodiff, then the reference evaluator het-eval) and prints
`step <i> loss <value>`; --check also trains the PyTorch model from the same
start and fails unless the traces agree within --rtol; BatchNorm's running
statistics are compared too, and the trained model in eval mode. With
--eval-mode the model is imported and trained as model.eval() runs it
(frozen batch norm, no dropout). Every failure ends as one `het.export:
error:` line naming, where it can, the model's source line (--debug adds
the traceback). Exit status: 0 on success, 1 on an import/tool/check error,
2 on bad arguments, 3 on an internal error (a defect of het's).
"""

import argparse
import contextlib
import copy
import importlib
import importlib.util
import logging
import os
import sys
import traceback

import numpy as np

from .errors import HetError


def _load_factory(spec: str):
    if ":" not in spec:
        raise HetError(f"expected FILE.py:FACTORY or module:FACTORY, got {spec!r}")
    where, name = spec.rsplit(":", 1)
    if where.endswith(".py") or os.sep in where:
        if not os.path.isfile(where):
            raise HetError(f"model file {where!r} does not exist")
        mod_name = "_het_model_" + os.path.splitext(os.path.basename(where))[0]
        loader_spec = importlib.util.spec_from_file_location(mod_name, where)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[mod_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as e:
            raise HetError(f"importing {where} failed: {type(e).__name__}: {e}") from e
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise HetError(f"cannot import module {where!r}: {e}") from e
    factory = getattr(module, name, None)
    if factory is None or not callable(factory):
        raise HetError(f"{where} has no callable {name!r}")
    return factory


def _shape(text: str):
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must be comma-separated integers, got {text!r}")
    if not dims or any(d <= 0 for d in dims):
        raise argparse.ArgumentTypeError(f"shape dimensions must be positive, got {text!r}")
    return dims


def add_model_arguments(p):
    """The model and its example inputs; shared with `python -m het.coverage`."""
    p.add_argument("model", help="FILE.py:FACTORY (or module:FACTORY) returning a torch.nn.Module")
    p.add_argument("--input-shape", type=_shape, action="append", required=True,
                   help="shape of a forward argument, e.g. 64,3,32,32 (repeat for several)")
    p.add_argument("--input-dtype", action="append", choices=["float32", "float64", "int64"],
                   help="dtype of each input (default float32; int64 for token ids)")
    p.add_argument("--input-high", type=int, default=None,
                   help="int64 inputs are drawn from [0, HIGH) (default: the first Embedding's size)")
    p.add_argument("--seed", type=int, default=0)


def _parser():
    p = argparse.ArgumentParser(prog="python -m het.export", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_arguments(p)
    p.add_argument("--loss", choices=["cross_entropy", "mse", "none"], default="cross_entropy")
    p.add_argument("-o", "--output", required=True, help="output .mlir path")
    p.add_argument("--function", default="forward", help="name of the emitted func.func")
    p.add_argument("--train-steps", type=int, default=0, help="run N training steps with het-eval")
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--fuse", action="store_true",
                   help="train the fused step (het-opt --het-training-pipeline)")
    p.add_argument("--check", action="store_true", help="compare the loss trace with PyTorch")
    p.add_argument("--eval-mode", action="store_true",
                   help="import and train the model as model.eval() runs it: BatchNorm with its "
                        "running statistics (frozen, as when fine-tuning), dropout off")
    p.add_argument("--precision", choices=["f32", "f64", "bf16", "fp16"], default=None,
                   help="f32/f64: arithmetic of the training run and of --check's PyTorch run "
                        "(f64 compares the two implementations without float32 rounding, "
                        "which deep ReLU/batch-norm networks amplify past any tolerance within "
                        "a few steps; PyTorch's own f32 trace differs from its f64 one by "
                        "~1e-2). bf16/fp16: train in that format by het's autocast policy "
                        "(PyTorch's), stated as het.precision in the output (het-compile "
                        "follows it); --check then runs PyTorch under torch.autocast (fp16 with "
                        "torch.amp.GradScaler). Default: f32, or the model's own format when "
                        "it is in bf16/f16 or uses autocast")
    p.add_argument("--rtol", type=float, default=None,
                   help="--check's bound on the relative loss difference per step (default "
                        "1e-4; 2e-2 in bf16/fp16: a few roundings of 8 or 11 bits)")
    p.add_argument("--plot", help="write the loss curve to this image file")
    p.add_argument("--debug", action="store_true",
                   help="on an error, also print the Python traceback and torch's own error log "
                        "(without it every failure is one `het.export: error:` line)")
    return p


def load_model(torch, args):
    """Calls the factory named by `args.model` (seeded with --seed); the module."""
    factory = _load_factory(args.model)
    torch.manual_seed(args.seed)
    try:
        model = factory()
    except Exception as e:
        raise HetError(f"calling {args.model} failed: {type(e).__name__}: {e}") from e
    if not isinstance(model, torch.nn.Module):
        raise HetError(f"{args.model} returned {type(model).__name__}, not a torch.nn.Module")
    return model


def example_inputs(torch, model, args, gen=None):
    """Random forward arguments as --input-shape/--input-dtype/--input-high say."""
    if gen is None:
        gen = torch.Generator().manual_seed(args.seed)
    dtypes = args.input_dtype or []
    if len(dtypes) > len(args.input_shape):
        raise HetError("more --input-dtype than --input-shape options")
    high = args.input_high
    if high is None:
        emb = [m for m in model.modules() if isinstance(m, torch.nn.Embedding)]
        high = emb[0].num_embeddings if emb else 2
    inputs = []
    for i, shape in enumerate(args.input_shape):
        dtype = dtypes[i] if i < len(dtypes) else "float32"
        if dtype == "int64":
            inputs.append(torch.randint(0, high, shape, generator=gen))
        else:
            inputs.append(torch.randn(shape, generator=gen, dtype=getattr(torch, dtype)))
    # A model in bf16 or f16 takes its float inputs in its format (the
    # same values, rounded).
    low = next((p.dtype for p in model.parameters()
                if p.dtype in (torch.bfloat16, torch.float16)), None)
    if low is not None:
        inputs = [x.to(low) if x.dtype == torch.float32 else x for x in inputs]
    return inputs


def _example_batch(torch, model, args):
    gen = torch.Generator().manual_seed(args.seed)
    inputs = example_inputs(torch, model, args, gen)
    target = None
    if args.loss != "none":
        model.train()
        # The forward that shapes the target must not count as a step:
        # BatchNorm would update its running statistics.
        buffers = copy.deepcopy(dict(model.named_buffers()))
        with torch.no_grad():
            try:
                out = model(*inputs)
            except Exception as e:
                raise HetError(f"the model does not run on inputs of shape "
                               f"{[list(s) for s in args.input_shape]}: {type(e).__name__}: {e}") from e
            for name, buffer in model.named_buffers():
                buffer.copy_(buffers[name])
        if not isinstance(out, torch.Tensor):
            raise HetError(f"the model returns {type(out).__name__}, expected one tensor")
        if args.loss == "cross_entropy":
            if out.dim() < 1:
                raise HetError("cross_entropy needs logits [..., C]; the model returns a scalar")
            target = torch.randint(0, out.shape[-1], tuple(out.shape[:-1]), generator=gen)
        else:
            target = torch.randn(out.shape, generator=gen, dtype=out.dtype)
    return inputs, target


def _max_relative(trace, reference):
    return max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(trace, reference))


def _torch_loss(out, target, loss):
    """PyTorch's value of the loss het.from_torch appends (`loss`)."""
    import torch.nn.functional as F

    if loss == "cross_entropy":
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))
    if loss == "mse":
        return F.mse_loss(out, target)
    return out


def _agrees(err, noise, rtol):
    """Within rtol, or -- when PyTorch's own trace moves by more than rtol
    under a rounding-sized nudge -- within 10x that sensitivity."""
    return err <= rtol or (noise > rtol and err <= 10 * noise)


def _torch_trace(torch, model, inputs, target, loss, steps, optimizer, lr, training=True,
                 number_format="fp32"):
    """PyTorch's loss trace; in bf16/fp16 under torch.autocast, as het's
    policy is PyTorch's, and fp16 with torch.amp.GradScaler at het's
    defaults (initial scale 2^16, growth interval 2000)."""
    opt = torch.optim.SGD(model.parameters(), lr=lr) if optimizer == "sgd" else \
        torch.optim.Adam(model.parameters(), lr=lr)
    model.train(training)
    low = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(number_format)
    autocast = (lambda: torch.autocast("cpu", dtype=low)) if low else contextlib.nullcontext
    scaler = torch.amp.GradScaler("cpu", init_scale=65536.0, growth_interval=2000) \
        if number_format == "fp16" else None
    trace = []
    for _ in range(steps):
        opt.zero_grad()
        with autocast():
            value = _torch_loss(model(*inputs), target, loss)
        if scaler is None:
            value.backward()
            opt.step()
        else:
            scaler.scale(value).backward()
            scaler.step(opt)
            scaler.update()
        trace.append(float(value))
    return trace


def _check_state(torch, model, prog, het_final, trained, err, where, noise, inputs, target, args):
    """The buffers het's training updated (BatchNorm's running statistics)
    against PyTorch's after the same steps, then eval mode: the model with
    het's trained parameters and buffers, in eval mode, run by PyTorch and
    imported into het (running statistics as constants) must agree."""
    from . import tools
    from .importer import from_torch

    print(f"running statistics after {args.train_steps} steps ({len(prog.state)} buffers): "
          f"max relative difference {err:.3g} at {where} (rtol {args.rtol:g}); "
          f"PyTorch against itself nudged: {noise:.3g}")
    if not _agrees(err, noise, args.rtol):
        raise HetError(f"het's running statistics differ from PyTorch's by {err:.3g} at {where}")
    # Eval mode with het's trained values: PyTorch's forward, and het's.
    model.load_state_dict(trained)
    tools.to_torch({k: v for k, v in het_final.items() if k in prog.params or k in prog.state},
                   model)
    model.eval()
    with torch.no_grad():
        out = model(*inputs)
    evaluated = from_torch(model, tuple(inputs), loss=args.loss, target=target,
                           function=args.function + "_eval", training=False)
    if evaluated.state:
        raise HetError("the eval-mode model still updates buffers: " + ", ".join(evaluated.state))
    feed = evaluated.initial_values()
    feed.update({name: t.numpy() for name, t in zip(evaluated.input_names,
                                                     list(inputs) + [target])})
    het_loss = float(tools.evaluate(evaluated, feed, function=args.function + "_eval",
                                    precision="f64" if args.precision == "f64" else "f32")["result0"])
    torch_loss = float(_torch_loss(out, target, args.loss))
    difference = abs(het_loss - torch_loss) / max(abs(torch_loss), 1e-30)
    print(f"eval mode with het's trained values: loss {het_loss:.8g} (het) vs {torch_loss:.8g} "
          f"(PyTorch), relative difference {difference:.3g}")
    if difference > args.rtol:
        raise HetError(f"in eval mode het's loss differs from PyTorch's by {difference:.3g}")


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        import torch
    except ImportError:
        print("het.export: error: torch is not installed (see docs/python.md)", file=sys.stderr)
        return 1
    from .compat import torch_error_summary

    # torch logs the tracebacks of a failed capture (fake tensors, export) at
    # ERROR level before raising; the error that follows says it once.
    quiet = logging.root.manager.disable
    if not args.debug:
        logging.disable(logging.ERROR)
    try:
        return _export(args, torch)
    except HetError as e:
        if args.debug:
            traceback.print_exc()
        print(f"het.export: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a defect of het's, or torch's outside capture
        if args.debug:
            traceback.print_exc()
        print(f"het.export: error: internal error while exporting {args.model}: "
              f"{torch_error_summary(e)} (a defect: please report it with the output of --debug)",
              file=sys.stderr)
        return 3
    finally:
        logging.disable(quiet)


def _export(args, torch) -> int:
    """main's work: import, save, and with --train-steps train (and --check)."""
    from . import checks, tools
    from .compat import without_dropout
    from .importer import from_torch

    model = load_model(torch, args)
    inputs, target = _example_batch(torch, model, args)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    low = args.precision in ("bf16", "fp16")
    prog = from_torch(model, tuple(inputs), loss=args.loss, target=target, function=args.function,
                      training=not args.eval_mode, precision=args.precision if low else None)
    # The format it trains in (asked, or the model's own), and the
    # arithmetic of the reference evaluator and of --check.
    number_format = prog.precision
    arithmetic = "f64" if args.precision == "f64" else "f32"
    if arithmetic == "f64" and number_format != "fp32":
        raise HetError(f"--precision f64 compares in f64, but the model computes in "
                       f"{number_format} (its parameters' format or an autocast region); "
                       f"leave --precision out to train it in {number_format}")
    if args.rtol is None:
        args.rtol = 1e-4 if number_format == "fp32" else 2e-2
    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    mlir_path, npz_path = prog.save(args.output)
    # het's inputs are f32 where the model's are 16-bit (exactly).
    wide = lambda t: t.float() if t.dtype in (torch.bfloat16, torch.float16) else t
    data = {name: wide(t).numpy() for name, t in zip(prog.input_names, list(inputs) + [target])}
    data_path = os.path.splitext(args.output)[0] + ".data.npz"
    np.savez(data_path, **data)
    print(f"het.export: wrote {mlir_path} ({len(prog.params)} parameters, {prog.num_layers} layers), "
          f"{npz_path}, {data_path}")

    if args.train_steps > 0:
        feed = prog.initial_values()
        feed.update(data)
        result = tools.train(prog, feed, steps=args.train_steps, function=args.function,
                             optimizer=args.optimizer, learning_rate=args.lr, fuse=args.fuse,
                             precision=arithmetic, number_format=number_format)
        for i, value in enumerate(result.losses):
            print(f"step {i} loss {value:.8g}")
        if args.plot:
            from .plot import loss_curve

            loss_curve({"het": result.losses}, args.plot)
        if args.check:
            model.load_state_dict(initial)
            het_losses, reference_context = result.losses, contextlib.nullcontext()
            het_final = result
            if checks.dropout_sites(prog):
                # het's masks are not torch's: dropout on, the loss must
                # fall; the trace is compared with dropout off on both
                # sides; the masks are checked on their own.
                if not result.losses[-1] < result.losses[0]:
                    raise HetError(f"with dropout the loss did not fall in {args.train_steps} "
                                   f"steps ({result.losses[0]:.6g} -> {result.losses[-1]:.6g})")
                print(f"with dropout: loss {result.losses[0]:.6g} -> {result.losses[-1]:.6g}")
                for line in checks.dropout_statistics(prog):
                    print(line)
                plain = from_torch(model, tuple(inputs), loss=args.loss, target=target,
                                   function=args.function, dropout=False)
                feed = plain.initial_values()
                feed.update(data)
                het_final = tools.train(plain, feed, steps=args.train_steps,
                                        function=args.function, optimizer=args.optimizer,
                                        learning_rate=args.lr, fuse=args.fuse,
                                        precision=arithmetic, number_format=number_format)
                het_losses = het_final.losses
                print(f"without dropout: {' '.join(f'{v:.8g}' for v in het_losses)}")
                reference_context = without_dropout()
                model.load_state_dict(initial)
            check_inputs, check_target = inputs, target
            if number_format != "fp32":
                # f32 master weights under autocast, as het trains it
                model = model.float()
                check_inputs = [wide(t) for t in inputs]
                check_target = wide(target) if target is not None else None
            if args.precision == "f64":
                model = model.double()
                wide = lambda t: t.double() if t is not None and t.is_floating_point() else t
                check_inputs, check_target = [wide(t) for t in inputs], wide(target)
            start = copy.deepcopy(model.state_dict())
            with reference_context:
                ref = _torch_trace(torch, model, check_inputs, check_target, args.loss,
                                   args.train_steps, args.optimizer, args.lr,
                                   training=not args.eval_mode, number_format=number_format)
                state_err, state_where = checks.state_difference(het_final, model, prog.state)
                trained = copy.deepcopy(model.state_dict())
                # PyTorch against itself, parameters nudged by about the
                # rounding of the precision: how much this run amplifies
                # rounding differences (deep batch-norm nets at tiny
                # batches amplify them past any tolerance).
                model.load_state_dict(start)
                nudge = 1e-13 if args.precision == "f64" else 1e-6
                with torch.no_grad():
                    for parameter in model.parameters():
                        parameter.mul_(1 + nudge)
                nudged = _torch_trace(torch, model, check_inputs, check_target, args.loss,
                                      args.train_steps, args.optimizer, args.lr,
                                      training=not args.eval_mode,
                                      number_format=number_format)
                state_noise, _ = checks.state_difference(
                    {k: v.numpy() for k, v in trained.items()}, model, prog.state)
            err = _max_relative(het_losses, ref)
            noise = _max_relative(nudged, ref)
            print(f"pytorch trace: {' '.join(f'{v:.8g}' for v in ref)}")
            print(f"max relative difference over {args.train_steps} steps: {err:.3g} (rtol {args.rtol:g}); "
                  f"PyTorch against itself with parameters scaled by 1+{nudge:g}: {noise:.3g}")
            if err <= args.rtol:
                pass
            elif _agrees(err, noise, args.rtol):
                within = next((i for i, (a, b) in enumerate(zip(het_losses, ref))
                               if abs(a - b) > args.rtol * max(abs(b), 1e-30)), len(ref))
                print(f"ill-conditioned run: PyTorch's own trace moves by {noise:.3g} under a "
                      f"{nudge:g} perturbation; het's difference is within 10x that "
                      f"(and within rtol for the first {within} of {len(ref)} steps)")
            else:
                raise HetError(f"het's loss trace differs from PyTorch's by {err:.3g} > {args.rtol:g}"
                               + (f" and > 10x PyTorch's own sensitivity {noise:.3g}"
                                  if noise > args.rtol else ""))
            if prog.state:
                _check_state(torch, model, prog, het_final, trained, state_err, state_where,
                             state_noise, check_inputs, check_target, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
