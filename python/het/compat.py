"""Makes third-party models capturable by `torch.export` without changing their math.

`het.from_torch` captures a module inside `exportable(module)`
(`torch.export.export`, then `run_decompositions`); `capture` does the same
for other tools (`python -m het.coverage`). Each fix is a temporary,
process-wide patch, undone on exit, also when the capture fails. Verified
with torch 2.6 and transformers 4.57 (test/python/test_hf.py: a tiny Llama,
GPT-2 and BERT export, and the exported program equals the eager model).

1. transformers' attention masks (Llama, GPT-2: every model that builds
   them with `transformers.masking_utils`). On torch >= 2.6,
   `sdpa_mask`/`eager_mask` vmap a scalar mask function
   `(batch_idx, head_idx, q_idx, kv_idx) -> bool` over four index ranges
   (`_vmap_for_bhqkv`). torch.export fails to trace that vmap in about 3
   of 4 processes (34 of 44 measured): "NYI: querying is_contiguous inside
   of vmap for memory_format other than torch.contiguous_format", because
   torch.fx's `_extract_tensor_metadata` asks `is_contiguous` for each
   format of a *set*, whose order follows the objects' addresses. The failed
   trace leaves torch's vmap level behind, so every later capture in the
   process fails too, with other messages ("tensor may have escaped from
   inside a function being vmapped", "Calling torch.func.vmap(compiled_fn)
   ..."). The fix swaps `_vmap_for_bhqkv` for the same mask function
   called once on index tensors shaped to broadcast (`[B,1,1,1]`,
   `[1,H,1,1]`, `[1,1,Q,1]`, `[1,1,1,KV]`), expanded to the vmapped
   result's shape. For a mask function made of element-wise ops and
   indexing by the index tensors, every element is the same as vmap's: that
   holds for masking_utils' own ones (causal, sliding window, chunked,
   padding, packed sequences, and their and/or combinations; the tests
   compare them with the vmapped masks), not for one that reduces over a
   (scalar) index, which none does. Everything else (which mask is built, padding
   and packed-sequence detection, when SDPA's `is_causal` replaces a
   mask) is untouched. Rejected alternatives: routing "sdpa"/"eager" to
   `sdpa_mask_older_torch` still vmaps (over q and kv), and to stay correct
   needs `_is_torch_greater_or_equal_than_2_6` off, which drops the
   packed-sequence mask and rejects or/and mask functions; transformers' own
   `sdpa_mask_without_vmap` (integrations/executorch.py) knows only causal,
   sliding and chunked patterns and needs the config switched to a new
   attention implementation.

2. No KV cache (transformers models): `config.use_cache` is False while
   capturing. A training step never reads the cache, and the logits do not
   depend on it; but a cache created inside forward (Llama's DynamicCache)
   adds `cat` ops with empty tensors, and its tensors become lifted constants
   named after `layers[:n]` that torch 2.6 cannot put back
   (`run_decompositions` fails: "references nonexistent attribute 0 of
   m.model.layers.slice(None, 2, None)._modules").

3. SDPA's output layout (any model, torch 2.6). In the captured graph
   `F.scaled_dot_product_attention` has the CPU flash kernel's output layout,
   which is the query's (`empty_like(query)`: `[N, H, L, E]` stored as
   `[N, L, H, E]` when the heads were split from a `[N, L, D]` projection,
   as `[L, N, H, E]` in nn.MultiheadAttention), so `.transpose(1, 2)
   .contiguous()` (or MHA's `.permute(2, 0, 1, 3).contiguous()`) records no
   copy; torch 2.6's decomposition returns the layout `[L, N, H, E]` instead,
   and a later `.view` of the merged heads (GPT-2's Conv1D:
   `x.view(-1, x.size(-1))`) fails in `run_decompositions` ("Cannot view a
   tensor with shape torch.Size([2, 16, 64]) and strides (64, 128, 1)";
   pytorch/pytorch#136543). The fix decomposes into the same ops
   (`_scaled_dot_product_attention_math`, a permute, a copy, a permute)
   with the query's layout: same values, different strides.

4. Sparse mixture-of-experts blocks (transformers' MixtralSparseMoeBlock
   and Qwen2MoeSparseMoeBlock). Their forward picks each expert's tokens
   with `nonzero`/`torch.where` and loops over the experts that got any,
   which torch.export cannot capture ("Could not extract specialized
   integer from data-dependent expression"). While capturing, the blocks
   run het's fixed-shape form instead (`het.moe`: router, dispatch into
   [E, C, D], the experts as three grouped matmuls over stacked weights
   and the rows the tokens filled, combine), and the models'
   `load_balancing_loss_func` is the same loss
   built from the router ops. With the default capacity (C = T) nothing is
   dropped and the values are the blocks' own (test_moe.py compares them);
   `moe_capacity_factor` sets GShard's capacity instead. Router jitter
   (Mixtral's `router_jitter_noise` in training) is refused: its noise
   comes from torch's generator.
"""


import contextlib
import os
import re
import sys
import traceback

__all__ = ["capture", "exportable", "uses_transformers"]


def uses_transformers(module) -> bool:
    """Whether any submodule of `module` is defined by the transformers package."""
    if "transformers" not in sys.modules:  # not imported: nothing can use it
        return False
    return any(type(m).__module__.startswith("transformers.") for m in module.modules())


def _broadcast_for_bhqkv(mask_function, bh_indices: bool = True):
    """Drop-in for `masking_utils._vmap_for_bhqkv`: the same mask, without vmap."""

    def masks(batch_idx, head_idx, q_idx, kv_idx):
        if bh_indices:
            b, h, q, kv = (batch_idx.reshape(-1, 1, 1, 1), head_idx.reshape(1, -1, 1, 1),
                           q_idx.reshape(1, 1, -1, 1), kv_idx.reshape(1, 1, 1, -1))
            shape = (b.shape[0], h.shape[1], q.shape[2], kv.shape[3])
        else:  # the batch and head indices are not vmapped: passed through (None)
            b, h, q, kv = batch_idx, head_idx, q_idx.reshape(-1, 1), kv_idx.reshape(1, -1)
            shape = (q.shape[0], kv.shape[1])
        # contiguous, as vmap's result is: callers may write into the mask in place
        return mask_function(b, h, q, kv).expand(shape).contiguous()

    return masks


@contextlib.contextmanager
def _transformers_masks():
    from transformers import masking_utils

    saved = masking_utils._vmap_for_bhqkv
    masking_utils._vmap_for_bhqkv = _broadcast_for_bhqkv
    try:
        yield
    finally:
        masking_utils._vmap_for_bhqkv = saved


def _transformers_fixable() -> bool:
    try:
        from transformers import masking_utils
    except ImportError:
        return False
    return callable(getattr(masking_utils, "_vmap_for_bhqkv", None))


@contextlib.contextmanager
def _no_kv_cache(module):
    """`config.use_cache = False` for every transformers config in the module."""
    configs = {}
    for m in module.modules():
        config = getattr(m, "config", None)
        if type(m).__module__.startswith("transformers.") and hasattr(config, "use_cache"):
            configs[id(config)] = (config, config.use_cache)
    try:
        for config, _ in configs.values():
            config.use_cache = False
        yield
    finally:
        for config, value in configs.values():
            config.use_cache = value


def _sdpa_cpu_decomposition(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None,
                            scale=None):
    """torch's decomposition of `_scaled_dot_product_flash_attention_for_cpu`
    (the math kernel), returning the output in the kernel's layout."""
    import torch

    torch._check(query.dim() == 4, lambda: f"q, k, v must be 4-dimensional, got {query.dim()}")
    torch._check(dropout_p == 0.0, lambda: f"dropout probability must be zero, got {dropout_p}")
    output, attn = torch.ops.aten._scaled_dot_product_attention_math.default(
        query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
        dropout_mask=None, scale=scale)
    # The output in the query's layout, as the kernel's meta function
    # allocates it (`empty_like(query)`): [N, H, L, E] stored as [N, L, H, E]
    # for heads split from a [N, L, D] projection (GPT-2, Llama), as
    # [L, N, H, E] for nn.MultiheadAttention's sequence-first q; torch 2.6's
    # decomposition stores it as [L, N, H, E] whatever the query.
    outer_first = sorted(range(query.dim()), key=lambda d: -int(query.stride(d)))
    back = [outer_first.index(d) for d in range(query.dim())]
    return output.permute(outer_first).contiguous(memory_format=torch.contiguous_format).permute(back), attn


@contextlib.contextmanager
def _sdpa_decomposition_layout():
    import torch
    from torch._decomp import decomposition_table

    op = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    op = getattr(op, "default", None)
    if op is None or op not in decomposition_table:
        yield
        return
    saved = decomposition_table[op]
    decomposition_table[op] = _sdpa_cpu_decomposition
    try:
        yield
    finally:
        decomposition_table[op] = saved


# transformers' sparse MoE blocks: (module, block class, expert projection
# names gate/up/down, loss function's module attribute)
_MOE_BLOCKS = (("mixtral", "MixtralSparseMoeBlock", ("w1", "w3", "w2")),
               ("qwen2_moe", "Qwen2MoeSparseMoeBlock", ("gate_proj", "up_proj", "down_proj")))


def _moe_forward(projections, capacity_factor, recorded):
    """The forward of a transformers sparse MoE block in het's fixed-shape
    form; appends its router logits to `recorded`."""
    import torch

    from . import moe  # noqa: F401  (defines torch.ops.het.moe_*)

    if capacity_factor is not None and not capacity_factor > 0:
        from .errors import HetImportError

        raise HetImportError(f"moe_capacity_factor must be positive, got {capacity_factor}")
    gate_name, up_name, down_name = projections

    def forward(self, hidden_states):
        from .errors import HetImportError

        if self.training and getattr(self, "jitter_noise", 0) > 0:
            raise HetImportError(f"{type(self).__name__}: router jitter noise "
                                 f"(router_jitter_noise = {self.jitter_noise}) draws from torch's "
                                 f"generator, which het cannot reproduce; set it to 0")
        batch, sequence, width = hidden_states.shape
        x = hidden_states.reshape(-1, width)
        logits = self.gate(x)
        experts = len(self.experts)
        # Mixtral always renormalizes the chosen probabilities; Qwen2-MoE
        # when norm_topk_prob says so.
        normalize = bool(getattr(self, "norm_topk_prob", True))
        weights, indices = torch.ops.het.moe_router(logits, self.top_k, normalize)
        buffer = torch.ops.het.moe_dispatch(x, indices, experts, float(capacity_factor or 0.0))

        def stacked(name):  # [E, out, in]: one batched contraction for all experts
            return torch.stack([getattr(e, name).weight for e in self.experts])

        def experts_matmul(rows, name):  # only the rows the tokens filled
            return torch.ops.het.moe_expert_matmul(rows, stacked(name), indices, True)

        act = self.experts[0].act_fn
        hidden = act(experts_matmul(buffer, gate_name)) * experts_matmul(buffer, up_name)
        out = experts_matmul(hidden, down_name)
        y = torch.ops.het.moe_combine(out, indices, weights.to(x.dtype))
        shared = getattr(self, "shared_expert", None)
        if shared is not None:  # Qwen2-MoE: a dense expert every token takes, gated
            y = y + torch.sigmoid(self.shared_expert_gate(x)) * shared(x)
        recorded.append(logits)
        return y.reshape(batch, sequence, width), logits

    return forward


def _load_balancing_loss(recorded, blocks):
    """transformers' load_balancing_loss_func (Switch Transformer's loss over
    all layers' router logits) from het's router ops: E * sum_e f_e * P_e
    with f_e the share of choices expert e got and P_e its mean probability.
    The logits are the last ones the model's `blocks` MoE blocks recorded
    (`recorded`, emptied here): transformers' own recording replaces each
    block's forward inside the traced call, which torch.export cannot trace."""

    def loss(gate_logits, num_experts=None, top_k=2, attention_mask=None):
        if len(recorded) < blocks:
            return 0
        gate_logits = tuple(recorded[-blocks:])
        recorded.clear()
        return _balance(gate_logits, num_experts, top_k, attention_mask)

    return loss


def _balance(gate_logits, num_experts, top_k, attention_mask):
    import torch

    from .errors import HetImportError

    if attention_mask is not None:
        raise HetImportError("the load-balancing loss with an attention mask (padding tokens "
                             "left out) has no het mapping yet; call the model without one")
    fractions, probabilities = [], []
    for logits in gate_logits:  # every layer routes the same tokens: means of means
        _, indices = torch.ops.het.moe_router(logits, top_k, False)
        p = torch.softmax(logits, dim=-1)
        fractions.append(torch.ops.het.moe_expert_fraction(indices, num_experts, p.dtype))
        probabilities.append(p.mean(dim=0))
    layers = len(gate_logits)
    f = torch.stack(fractions).sum(dim=0) / layers
    P = torch.stack(probabilities).sum(dim=0) / layers
    return (f * P).sum() * num_experts


def _moe_patchable(module):
    """(module object, block class, projections) of each transformers sparse
    MoE block class used in `module`."""
    used = {type(m) for m in module.modules()}
    found = []
    for family, block, projections in _MOE_BLOCKS:
        models = sys.modules.get(f"transformers.models.{family}.modeling_{family}")
        cls = getattr(models, block, None) if models else None
        if cls is not None and cls in used:
            found.append((models, cls, projections))
    return found


@contextlib.contextmanager
def _moe_blocks(module, capacity_factor):
    saved, registry_saved = [], {}
    recorded = []  # the router logits of the forward being traced, in layer order
    try:
        patchable = _moe_patchable(module)
        classes = tuple(cls for _, cls, _ in patchable)
        blocks = sum(isinstance(m, classes) for m in module.modules())
        for models, cls, projections in patchable:
            saved.append((cls, "forward", cls.forward))
            cls.forward = _moe_forward(projections, capacity_factor, recorded)
            if hasattr(models, "load_balancing_loss_func"):
                saved.append((models, "load_balancing_loss_func", models.load_balancing_loss_func))
                models.load_balancing_loss_func = _load_balancing_loss(recorded, blocks)
        for m in module.modules():
            # transformers' recording (below) leaves the block's original
            # forward behind as an instance attribute after a call, which
            # would hide the class's patched one.
            if isinstance(m, classes) and "forward" in m.__dict__:
                saved.append((m, "forward", m.__dict__.pop("forward")))
        if patchable:
            # transformers records `router_logits` by assigning each block's
            # forward inside the model's call (utils/generic.py,
            # check_model_inputs), which dynamo cannot trace; the blocks
            # record their own logits instead.
            from transformers.utils import generic

            registry = getattr(generic, "_CAN_RECORD_REGISTRY", {})
            for key, flags in list(registry.items()):
                if isinstance(flags, dict) and "router_logits" in flags:
                    registry_saved[key] = flags
                    registry[key] = {k: v for k, v in flags.items() if k != "router_logits"}
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)
        if registry_saved:
            from transformers.utils import generic

            generic._CAN_RECORD_REGISTRY.update(registry_saved)


@contextlib.contextmanager
def exportable(module, moe_capacity_factor=None):
    """Context in which `torch.export.export(module, ...)` and then
    `run_decompositions()` can capture `module` (see the module docstring).

    Fixes 1, 2 and 4 apply only to modules built from transformers classes;
    fix 3 to every module. All are undone on exit, on success and on error
    alike. `moe_capacity_factor`: rows per expert of fix 4 (None: every
    token, nothing dropped)."""
    with contextlib.ExitStack() as stack:
        if uses_transformers(module):
            if _transformers_fixable():
                stack.enter_context(_transformers_masks())
            stack.enter_context(_no_kv_cache(module))
            stack.enter_context(_moe_blocks(module, moe_capacity_factor))
        stack.enter_context(_sdpa_decomposition_layout())
        yield


def capture(module, example_inputs, training: bool = True, moe_capacity_factor=None):
    """The decomposed `ExportedProgram` that `het.from_torch` maps.

    The same steps as from_torch: `torch.export.export` in training mode (or
    eval mode with training=False: BatchNorm normalizes with its running
    statistics, dropout is off) inside `exportable(module)`, then
    `run_decompositions()` (core ATen); the module's train/eval mode is
    restored. Raises HetImportError when torch.export cannot capture the
    module."""
    import torch

    from .errors import HetImportError

    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    was_training = module.training
    module.train(training)
    try:
        with exportable(module, moe_capacity_factor):
            try:
                ep = torch.export.export(module, tuple(example_inputs))
            except Exception as e:  # torch's own message says what it could not trace
                raise HetImportError(f"torch.export could not capture the model: "
                                     f"{torch_error_summary(e)}") from e
            try:
                return ep.run_decompositions()
            except Exception as e:
                raise HetImportError(f"torch's decomposition of the captured model to core ATen "
                                     f"failed: {torch_error_summary(e)}") from e
    finally:
        module.train(was_training)


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s+(\S[^\n]*)')


def torch_error_summary(error) -> str:
    """One line for an error torch raised while capturing or decomposing a
    model: its type, the first line of its message, and the last frame of
    the model's own code it names ("Original traceback:" of a failed
    decomposition, "from user code:" of torch.export) or, failing that, the
    last frame of the traceback outside torch."""
    text = str(error)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    frames = _FRAME.findall(text)
    where = None
    if frames:
        path, line, function, code = frames[-1]
        where = f"{path}:{line} ({function}): {code.strip()}"
    else:
        for frame in reversed(traceback.extract_tb(error.__traceback__)):
            if f"{os.sep}torch{os.sep}" not in frame.filename and f"{os.sep}het{os.sep}" not in frame.filename:
                where = f"{frame.filename}:{frame.lineno} ({frame.name}): {(frame.line or '').strip()}"
                break
    summary = f"{type(error).__name__}: {first}"
    return summary + (f" at {where}" if where else "")


@contextlib.contextmanager
def without_dropout():
    """Runs PyTorch models with every dropout off (identity), also in
    training mode: `F.dropout` (which nn.Dropout calls) and the `dropout_p`
    of `F.scaled_dot_product_attention`. What `het.export --check` compares
    het against when the model has dropout (het's own draws differ from
    torch's generator; het imports the model with `dropout=False` for it)."""
    import torch.nn.functional as F

    saved = F.dropout, F.scaled_dot_product_attention
    sdpa = saved[1]

    def identity(input, p=0.5, training=True, inplace=False):
        return input

    def sdpa_without_dropout(*args, **kwargs):
        if len(args) > 4:
            args = args[:4] + (0.0,) + args[5:]
        kwargs["dropout_p"] = 0.0
        return sdpa(*args, **kwargs)

    F.dropout, F.scaled_dot_product_attention = identity, sdpa_without_dropout
    try:
        yield
    finally:
        F.dropout, F.scaled_dot_product_attention = saved
