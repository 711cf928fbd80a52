"""GPT-2-class decoders from Hugging Face transformers, random weights (nothing
is downloaded), as `nn.Module`s that take `input_ids` (int64 [batch, seq])
and return the logits, for token files of `python -m het.data prepare`:

    python -m het.export examples/llm/gpt2.py:tiny --input-shape 8,32 \\
        --input-dtype int64 -o lm.mlir

`tiny` (2 layers, width 64, vocabulary 512) is the CI-sized model; `small`
is GPT-2 small's shape (12 layers, width 768, 12 heads: 124 M parameters
at a vocabulary of 50257) at the vocabulary the corpus was prepared with.
"""

import os
import sys

import torch

# The logits wrapper of the tests' tiny models (examples/torch/hf_tiny.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch"))
from hf_tiny import Logits  # noqa: E402


def gpt2(vocab, layers, width, heads, positions, seed=0):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=vocab, n_embd=width, n_layer=layers, n_head=heads,
                        n_positions=positions, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        attn_implementation="eager")
    return Logits(GPT2LMHeadModel(config))


def tiny(vocab=512):
    return gpt2(vocab, layers=2, width=64, heads=4, positions=64)


def small(vocab=8192):
    return gpt2(vocab, layers=12, width=768, heads=12, positions=1024)
