"""Tiny Hugging Face transformers models with random weights (nothing is
downloaded), as `nn.Module`s that take `input_ids` (int64 [batch, seq], seq
at most 64) and return the logits:

    python -m het.coverage examples/torch/hf_tiny.py:llama \\
        --input-shape 2,16 --input-dtype int64

Each factory takes `attn_implementation` ("sdpa", transformers' default, or
"eager") and `dropout` (0 by default); `*_dropout` build them with p = 0.1. The tests (test/python/test_hf.py) use them.
"""

import torch
import torch.nn as nn


class Logits(nn.Module):
    """`model(input_ids=...).logits`: one tensor out, as het.from_torch wants."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits


def llama(attn_implementation="sdpa", dropout=0.0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         attention_dropout=dropout, attn_implementation=attn_implementation)
    return Logits(LlamaForCausalLM(config))


def gpt2(attn_implementation="sdpa", dropout=0.0):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=64, resid_pdrop=dropout,
                        embd_pdrop=dropout, attn_pdrop=dropout, attn_implementation=attn_implementation)
    return Logits(GPT2LMHeadModel(config))


def bert(attn_implementation="sdpa", dropout=0.0):
    """A sequence classifier (5 labels): logits [batch, 5]."""
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=64, num_labels=5,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                        classifier_dropout=dropout, attn_implementation=attn_implementation)
    return Logits(BertForSequenceClassification(config))


class LossWithRouterAux(nn.Module):
    """A mixture-of-experts causal LM's training loss as its users compute
    it: cross-entropy of the logits against `labels` plus
    `router_aux_loss_coef` times the model's load-balancing loss over every
    layer's router (transformers' `output_router_logits=True`). Takes
    (input_ids, labels); returns the 0-d loss (`het.export --loss none`)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels):
        out = self.model(input_ids=input_ids, output_router_logits=True)
        logits = out.logits
        ce = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        return ce + self.model.config.router_aux_loss_coef * out.aux_loss


def mixtral(attn_implementation="sdpa"):
    """Mixtral: 4 experts, top-2 (renormalized), SwiGLU experts, aux loss 0.02."""
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                           num_local_experts=4, num_experts_per_tok=2, router_aux_loss_coef=0.02,
                           attn_implementation=attn_implementation)
    return LossWithRouterAux(MixtralForCausalLM(config))


def qwen2_moe(attn_implementation="sdpa"):
    """Qwen2-MoE: 4 experts, top-2 without renormalization, a gated shared
    expert, the second layer dense (decoder_sparse_step 1, mlp_only_layers [1])."""
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    torch.manual_seed(0)
    config = Qwen2MoeConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                            moe_intermediate_size=32, shared_expert_intermediate_size=48,
                            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                            max_position_embeddings=64, num_experts=4, num_experts_per_tok=2,
                            norm_topk_prob=False, mlp_only_layers=[1], router_aux_loss_coef=0.02,
                            attn_implementation=attn_implementation)
    return LossWithRouterAux(Qwen2MoeForCausalLM(config))


# dropout p = 0.1 wherever the config has one (LLaMA: on the attention weights)
def llama_dropout():
    return llama(dropout=0.1)


def gpt2_dropout():
    return gpt2(dropout=0.1)


def bert_dropout():
    return bert(dropout=0.1)


MODELS = {"llama": llama, "gpt2": gpt2, "bert": bert}

if __name__ == "__main__":
    ids = torch.randint(0, 128, (2, 16))
    for name, factory in MODELS.items():
        print(name, tuple(factory()(ids).shape))
