"""Mixture of experts as torch ops that het maps one to one (HetMoEOps.td).

A Hugging Face sparse MoE block (Mixtral, Qwen2-MoE) routes tokens with
data-dependent code: `nonzero`, `torch.where` on a one-hot mask and
`index_add_` over as many tokens as each expert happened to get. torch.export
cannot capture that ("Could not extract specialized integer from
data-dependent expression"), and a static graph could not hold it. het
instead writes the block as fixed-shape steps, as GShard and Switch do:

    weights, indices = torch.ops.het.moe_router(logits, k, normalize)
    buffer = torch.ops.het.moe_dispatch(x, indices, E, 0.0)  # [E, C = T, D]
    out = experts(buffer)     # moe_expert_matmul: each expert's filled rows
    y = torch.ops.het.moe_combine(out, indices, weights)    # [T, D]

With the capacity `C = T` no choice is dropped and `y` equals the dropless
block. These ops have eager implementations (so the rewritten block can be
run and compared with the original) and shape functions (so torch.export
records each as one node); het.compat swaps them into the blocks while
capturing (`moe_blocks`), and the importer maps each to its het op.

`moe_rows` is the slot order all of them share: choice `j` of token `t`
takes the next row of its expert in the order (j, t), every first choice
before any second one; a choice past the capacity is dropped.
"""

import math
from typing import Tuple

import torch

__all__ = ["moe_rows", "expert_capacity"]


def expert_capacity(tokens: int, top_k: int, experts: int, capacity_factor=None) -> int:
    """Rows per expert: `tokens` (nothing dropped) without a factor, else
    ceil(factor * tokens * top_k / experts) as GShard sizes it (at least 1,
    at most `tokens`): het.moe_dispatch's rule (MoEDispatchOp::capacityFor)."""
    if capacity_factor is None:
        return tokens
    if capacity_factor <= 0:
        raise ValueError(f"capacity factor must be positive, got {capacity_factor}")
    return min(tokens, max(1, math.ceil(capacity_factor * tokens * top_k / experts)))


def moe_rows(indices: torch.Tensor, experts: int, capacity: int) -> torch.Tensor:
    """The row of its expert each choice of `indices` [T, k] takes, -1 where dropped."""
    tokens, k = indices.shape
    rows = torch.full((tokens, k), -1, dtype=torch.int64)
    taken = [0] * experts
    flat = indices.tolist()
    for j in range(k):
        for t in range(tokens):
            e = flat[t][j]
            if not 0 <= e < experts:
                raise ValueError(f"expert {e} chosen by token {t} is outside [0, {experts})")
            if taken[e] < capacity:
                rows[t, j] = taken[e]
                taken[e] += 1
    return rows


@torch.library.custom_op("het::moe_router", mutates_args=())
def moe_router(logits: torch.Tensor, top_k: int, normalize: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    # In f32 at least, as Mixtral and Qwen2-MoE route (softmax with
    # dtype=torch.float), then in the logits' format, as they cast back.
    p = torch.softmax(logits, dim=-1, dtype=torch.promote_types(logits.dtype, torch.float32))
    weights, indices = torch.topk(p, top_k, dim=-1)
    if normalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(logits.dtype), indices


@moe_router.register_fake
def _(logits, top_k, normalize):
    shape = (logits.shape[0], top_k)
    return logits.new_empty(shape), logits.new_empty(shape, dtype=torch.int64)


@torch.library.custom_op("het::moe_dispatch", mutates_args=())
def moe_dispatch(x: torch.Tensor, indices: torch.Tensor, experts: int,
                 capacity_factor: float) -> torch.Tensor:
    """[E, C, D]; capacity_factor 0: C = T (nothing dropped)."""
    capacity = expert_capacity(x.shape[0], indices.shape[1], experts, capacity_factor or None)
    rows = moe_rows(indices, experts, capacity)
    buffer = x.new_zeros((experts, capacity, x.shape[1]))
    for (t, j) in (rows >= 0).nonzero().tolist():
        buffer[indices[t, j], rows[t, j]] = x[t]
    return buffer


@moe_dispatch.register_fake
def _(x, indices, experts, capacity_factor):
    capacity = expert_capacity(x.shape[0], indices.shape[1], experts, capacity_factor or None)
    return x.new_empty((experts, capacity, x.shape[1]))


@torch.library.custom_op("het::moe_combine", mutates_args=())
def moe_combine(expert_output: torch.Tensor, indices: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    experts, capacity, width = expert_output.shape
    rows = moe_rows(indices, experts, capacity)
    y = expert_output.new_zeros((indices.shape[0], width))
    for j in range(indices.shape[1]):  # each token's choices in order, as het sums them
        for t in range(indices.shape[0]):
            if rows[t, j] >= 0:
                y[t] += weights[t, j] * expert_output[indices[t, j], rows[t, j]]
    return y


@moe_combine.register_fake
def _(expert_output, indices, weights):
    return expert_output.new_empty((indices.shape[0], expert_output.shape[2]))


def filled_rows(indices: torch.Tensor, experts: int, capacity: int):
    """Each expert's rows its tokens filled: min(choices, capacity)."""
    flat = indices.reshape(-1)
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= experts):
        raise ValueError(f"expert indices must be in [0, {experts}), got {flat.min()}..{flat.max()}")
    counts = torch.bincount(flat, minlength=experts)
    return [min(int(c), capacity) for c in counts]


@torch.library.custom_op("het::moe_expert_matmul", mutates_args=())
def moe_expert_matmul(rows: torch.Tensor, weight: torch.Tensor, indices: torch.Tensor,
                      transpose_rhs: bool) -> torch.Tensor:
    """[E, C, K] x [E, K, N] (or [E, N, K] transposed) over each expert's filled rows."""
    experts, capacity, _ = rows.shape
    w = weight.transpose(1, 2) if transpose_rhs else weight
    y = rows.new_zeros((experts, capacity, w.shape[2]))
    for e, n in enumerate(filled_rows(indices, experts, capacity)):
        y[e, :n] = rows[e, :n] @ w[e]
    return y


@moe_expert_matmul.register_fake
def _(rows, weight, indices, transpose_rhs):
    return rows.new_empty((rows.shape[0], rows.shape[1], weight.shape[1 if transpose_rhs else 2]))


@torch.library.custom_op("het::moe_expert_fraction", mutates_args=())
def moe_expert_fraction(indices: torch.Tensor, experts: int, dtype: torch.dtype) -> torch.Tensor:
    counts = torch.bincount(indices.reshape(-1), minlength=experts).to(dtype)
    return counts / indices.shape[0]


@moe_expert_fraction.register_fake
def _(indices, experts, dtype):
    return indices.new_empty((experts,), dtype=dtype)


# Gradients, so that PyTorch can train the fixed-shape form too (the same
# rules as het's: HetMoE.cpp).

def _router_setup(ctx, inputs, output):
    logits, top_k, normalize = inputs
    ctx.save_for_backward(logits, output[1])
    ctx.normalize = normalize


def _router_backward(ctx, grad_weights, grad_indices):
    logits, indices = ctx.saved_tensors
    with torch.enable_grad():
        x = logits.detach().requires_grad_()
        chosen = torch.softmax(x, dim=-1).gather(1, indices)
        if ctx.normalize:
            chosen = chosen / chosen.sum(dim=-1, keepdim=True)
        (grad,) = torch.autograd.grad(chosen, x, grad_weights)
    return grad, None, None


def _dispatch_setup(ctx, inputs, output):
    x, indices, experts, capacity_factor = inputs
    ctx.save_for_backward(indices)
    ctx.capacity = output.shape[1]


def _dispatch_backward(ctx, grad_buffer):
    (indices,) = ctx.saved_tensors
    ones = grad_buffer.new_ones(indices.shape)
    return moe_combine(grad_buffer, indices, ones), None, None, None


def _combine_setup(ctx, inputs, output):
    expert_output, indices, weights = inputs
    ctx.save_for_backward(expert_output, indices, weights)


def _combine_backward(ctx, grad_y):
    expert_output, indices, weights = ctx.saved_tensors
    rows = moe_rows(indices, expert_output.shape[0], expert_output.shape[1])
    grad_output = torch.zeros_like(expert_output)
    grad_weights = torch.zeros_like(weights)
    for (t, j) in (rows >= 0).nonzero().tolist():
        e, r = indices[t, j], rows[t, j]
        grad_output[e, r] = weights[t, j] * grad_y[t]
        grad_weights[t, j] = (grad_y[t] * expert_output[e, r]).sum()
    return grad_output, None, grad_weights


def _expert_matmul_setup(ctx, inputs, output):
    rows, weight, indices, transpose_rhs = inputs
    ctx.save_for_backward(rows, weight, indices)
    ctx.transpose_rhs = transpose_rhs


def _expert_matmul_backward(ctx, grad_y):
    rows, weight, indices = ctx.saved_tensors
    grad_rows = moe_expert_matmul(grad_y, weight, indices, not ctx.transpose_rhs)
    grad_weight = torch.zeros_like(weight)
    for e, n in enumerate(filled_rows(indices, rows.shape[0], rows.shape[1])):
        g = rows[e, :n].T @ grad_y[e, :n]  # [K, N]
        grad_weight[e] = g.T if ctx.transpose_rhs else g
    return grad_rows, grad_weight, None, None


moe_router.register_autograd(_router_backward, setup_context=_router_setup)
moe_expert_matmul.register_autograd(_expert_matmul_backward, setup_context=_expert_matmul_setup)
moe_dispatch.register_autograd(_dispatch_backward, setup_context=_dispatch_setup)
moe_combine.register_autograd(_combine_backward, setup_context=_combine_setup)
