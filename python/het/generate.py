"""Text from a trained language model: ``python -m het.generate``.

    python -m het.generate EXE --model lm.npz --params trained.npz \\
        --tokenizer corpus/tokenizer.json --prompt "def main(" [--tokens 32]
        [--top-k K --temperature T --seed S] [--check-transformers FILE.py:FACTORY]

EXE is the model het-compile built (one rank). Its arguments come from
``--model`` (the ``.npz`` het.export wrote: constants such as the attention
mask, and initial parameters) overridden by ``--params`` (what ``--save``
wrote after training). The prompt is encoded with the tokenizer
``het.data prepare`` wrote; the executable decodes ``--tokens`` more
(``EXE --steps 0 --generate N --prompt IDS``: greedy, or ``--top-k``
sampling) and this prints the text.

``--check-transformers FACTORY`` builds the same PyTorch module (e.g.
``examples/llm/gpt2.py:tiny``), loads the parameters into it and runs
transformers' greedy ``generate`` (``do_sample=False``) on the same prompt:
the tokens must be identical (exit status 1 otherwise, naming the first
that differs). Exit status 2 on bad arguments.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from .errors import HetError

_GENERATED = re.compile(r"^generated \d+ tokens \([^)]*\) after \d+ of the prompt: ?(.*)$", re.M)


def _arguments(model_npz, params_npz):
    arrays = dict(np.load(model_npz))
    if params_npz:
        arrays.update(np.load(params_npz))
    return arrays


def het_tokens(exe, arrays, prompt, tokens, top_k=0, temperature=1.0, seed=0, timeout=600):
    """The executable's continuation of `prompt` (token ids): `tokens` ids."""
    with tempfile.TemporaryDirectory(prefix="het-generate-") as tmp:
        npz = os.path.join(tmp, "arguments.npz")
        np.savez(npz, **arrays)
        cmd = [exe, "--steps", "0", "--load", npz, "--generate", str(tokens),
               "--prompt", ",".join(str(i) for i in prompt), "--seed", str(seed)]
        if top_k:
            cmd += ["--top-k", str(top_k), "--temperature", repr(temperature)]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        raise HetError(f"{exe} failed ({run.returncode}):\n{run.stderr.strip() or run.stdout[-2000:]}")
    match = _GENERATED.search(run.stdout)
    if not match:
        raise HetError(f"{exe} printed no generated tokens:\n{run.stdout[-2000:]}")
    return [int(t) for t in match.group(1).split()]


def transformers_tokens(factory, arrays, prompt, tokens):
    """transformers' greedy continuation with the same parameters."""
    import torch

    from .export import _load_factory
    from .tools import to_torch

    torch.manual_seed(0)
    module = _load_factory(factory)()
    to_torch({k: v for k, v in arrays.items() if not k.startswith("const.")}, module)
    model = getattr(module, "model", module)
    if not hasattr(model, "generate"):
        raise HetError(f"{factory} builds no transformers model (no .generate, nor a .model "
                       f"that has one)")
    model.eval()
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=tokens, do_sample=False,
                             attention_mask=torch.ones(1, len(prompt), dtype=torch.int64),
                             pad_token_id=0)
    return [int(t) for t in out[0, len(prompt):]]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m het.generate", description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("exe", help="the executable het-compile built for the model (one rank)")
    p.add_argument("--model", required=True, help="the .npz het.export wrote beside the model")
    p.add_argument("--params", help="trained parameters (the executable's --save)")
    p.add_argument("--tokenizer", help="tokenizer.json of het.data prepare (for text prompts)")
    p.add_argument("--prompt", required=True,
                   help="text (with --tokenizer) or token ids (464,3290,318 without)")
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--top-k", type=int, default=0, help="sample from the K likeliest (0: greedy)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--check-transformers", metavar="FILE.py:FACTORY",
                   help="compare with transformers' greedy decoding of the same parameters")
    a = p.parse_args(argv)
    if a.tokens < 1:
        p.error("--tokens must be at least 1")
    if a.check_transformers and a.top_k:
        p.error("--check-transformers compares greedy decoding; leave --top-k out")
    try:
        for path in [a.exe, a.model] + ([a.params] if a.params else []):
            if not os.path.exists(path):
                raise HetError(f"{path} does not exist")
        tokenizer = None
        if a.tokenizer:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(a.tokenizer)
            prompt = tokenizer.encode(a.prompt).ids
            if not prompt:
                raise HetError(f"the prompt {a.prompt!r} encodes to no tokens")
        else:
            try:
                prompt = [int(t) for t in re.split(r"[,\s]+", a.prompt.strip())]
            except ValueError:
                raise HetError(f"--prompt {a.prompt!r} is no list of token ids; give --tokenizer "
                               f"to encode text")
        arrays = _arguments(a.model, a.params)
        ids = het_tokens(os.path.abspath(a.exe), arrays, prompt, a.tokens, a.top_k,
                         a.temperature, a.seed)
        print("prompt ids:", " ".join(map(str, prompt)))
        print("generated ids:", " ".join(map(str, ids)))
        if tokenizer is not None:
            print("text:", repr(a.prompt + tokenizer.decode(ids)))
        if a.check_transformers:
            theirs = transformers_tokens(a.check_transformers, arrays, prompt, a.tokens)
            if theirs != ids:
                first = next(i for i, (x, y) in enumerate(zip(ids, theirs)) if x != y)
                raise HetError(f"token {first} differs from transformers' greedy decoding: het "
                               f"{ids[first]}, transformers {theirs[first]} (het {ids}, "
                               f"transformers {theirs})")
            print(f"transformers' greedy decoding of the same parameters: the same {a.tokens} "
                  f"tokens")
    except HetError as e:
        print(f"het.generate: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
