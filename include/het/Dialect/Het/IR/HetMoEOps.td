//===- HetMoEOps.td - mixture of experts -------------------*- tablegen -*-===//
//
// A mixture-of-experts layer (Mixtral, Qwen2-MoE, Switch/GShard) as het
// sees it: a router picks `k` of `E` experts per token and weighs them;
// `het.moe_dispatch` gathers each expert's tokens into a fixed-size
// `[E, C, D]` buffer (C, the capacity, from its result type); the experts
// run as contractions over that buffer (`het.moe_expert_matmul`: one op
// for all experts, shapes known at compile time, computing only the rows
// the tokens filled; a batched `het.matmul` also works, padded rows and
// all); `het.moe_combine` scatters the outputs back, weighted. The
// load-balancing loss is built from `het.moe_expert_fraction` and the
// router's probabilities with ordinary ops.
//
// Slot order. Token `t`'s choice `j` (`indices[t, j]`) takes the next free
// row of its expert in the order (j, t): every token's first choice before
// any second choice, as GShard and DeepSpeed's top-2 gating do, so a full
// expert drops second choices first. A choice whose row would be `C` or
// more is dropped: it reads and writes nothing. `C = T` (a token picks an
// expert at most once) drops nothing: the dropless reference of
// Hugging Face's Mixtral. dispatch, combine and moe_slot_grad recompute
// the rows from `indices` the same way, so no position tensor is stored.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_IR_HETMOEOPS_TD
#define HET_DIALECT_HET_IR_HETMOEOPS_TD

include "het/Dialect/Het/IR/HetComputeOps.td"
include "mlir/IR/SymbolInterfaces.td"

def Het_MoERouterOp : Het_InferredComputeOp<"moe_router", [Differentiable]> {
  let summary = "mixture-of-experts router: softmax, top-k, optional renormalization";
  let description = [{
    `logits` is `[T, E]`. Each row's softmax `p` is computed in the logits'
    format; its `top_k` largest entries (descending; on a tie the lower
    expert first) give `indices` `[T, k]` (i64) and `weights` `[T, k]`:
    the probabilities themselves, or with `normalize` divided by their sum
    (Mixtral; Qwen2-MoE's `norm_topk_prob`). The gradient flows to the
    logits through the weights; the choice itself has none.

    ```mlir
    %w, %i = het.moe_router %logits {top_k = 2 : i64, normalize}
        : tensor<32x4xf32> -> tensor<32x2xf32>, tensor<32x2xi64>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$logits, Het_I64Attr:$top_k, UnitAttr:$normalize);
  let results = (outs Het_FloatTensor:$weights, Het_IndexTensor:$indices);
  let assemblyFormat = [{
    $logits attr-dict `:` type($logits) `->` type($weights) `,` type($indices)
  }];
}

def Het_MoERouterGradOp : Het_InferredComputeOp<"moe_router_grad"> {
  let summary = "gradient of het.moe_router's weights with respect to its logits";
  let description = [{
    Recomputes the softmax `p` of `logits` and, for the chosen `indices`,
    the weights' gradient `g` back through the renormalization (with
    `normalize`: `ds_j = (g_j - sum_i g_i w_i) / sum_i p_i`) and the softmax
    (`dl = p * (dp - sum(dp * p))`, `dp` zero off the chosen experts).

    ```mlir
    %dl = het.moe_router_grad %dw, %logits, %i {normalize}
        : tensor<32x2xf32>, tensor<32x4xf32>, tensor<32x2xi64> -> tensor<32x4xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_weights, Het_FloatTensor:$logits,
                       Het_IndexTensor:$indices, UnitAttr:$normalize);
  let results = (outs Het_FloatTensor:$grad_logits);
  let assemblyFormat = [{
    $grad_weights `,` $logits `,` $indices attr-dict `:` type($grad_weights) `,`
    type($logits) `,` type($indices) `->` type($grad_logits)
  }];
}

def Het_MoEDispatchOp : Het_ComputeOp<"moe_dispatch", [Differentiable]> {
  let summary = "gather each expert's tokens into an [E, C, D] buffer";
  let description = [{
    `input` is `[T, D]`, `indices` `[T, k]` (experts in `[0, E)`); the
    result `[E, C, D]` (E experts from its type) holds in row `r` of
    expert `e` the token whose choice took that row (slot order: the
    file's header), times `weights[t, j]` when `weights` is given; rows no
    choice took are zero. An expert index outside `[0, E)` is a run-time
    error. The gradient of the input is `het.moe_combine` of the result's
    gradient with the same weights; of the weights, `het.moe_slot_grad`.

    The capacity C is `T` (nothing dropped) or, with `capacity_factor` f,
    `min(T, max(1, ceil(f * T * k / E)))` as GShard sizes it; the verifier
    holds the result type to it, so a stage that takes a share of the
    batch (fewer tokens) recomputes C from its own T.

    `gradient` marks the dispatch het-autodiff builds for het.moe_combine's
    gradient: executables count the choices each forward dispatch drops
    and report them at the end of a run; a gradient's are the same ones.

    ```mlir
    %buf = het.moe_dispatch %x, %i : tensor<32x16xf32>, tensor<32x2xi64> -> tensor<4x32x16xf32>
    %capped = het.moe_dispatch %x, %i {capacity_factor = 1.25 : f64}
        : tensor<32x16xf32>, tensor<32x2xi64> -> tensor<4x20x16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input, Het_IndexTensor:$indices,
                       Optional<Het_FloatTensor>:$weights,
                       OptionalAttr<F64Attr>:$capacity_factor, UnitAttr:$gradient);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $indices (`,` $weights^)? attr-dict `:` type($input) `,` type($indices)
    (`,` type($weights)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Rows per expert for `tokens` tokens of `topK` choices over `experts`.
    static int64_t capacityFor(int64_t tokens, int64_t topK, int64_t experts,
                               std::optional<double> factor);
  }];
}

def Het_MoECombineOp : Het_InferredComputeOp<"moe_combine", [Differentiable]> {
  let summary = "the experts' outputs back to their tokens, weighted and summed";
  let description = [{
    `expert_output` is `[E, C, D]`, `indices` `[T, k]`; the result `[T, D]`
    is, for each token, the sum over its choices `j` that were not dropped
    of `weights[t, j]` (1 without `weights`) times the row its choice took
    (slot order: the file's header). Dropped choices add nothing; a token
    whose every choice was dropped gets zeros (the residual connection
    around the layer carries it on, as in Switch Transformer).

    ```mlir
    %y = het.moe_combine %out, %i, %w
        : tensor<4x32x16xf32>, tensor<32x2xi64>, tensor<32x2xf32> -> tensor<32x16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$expert_output, Het_IndexTensor:$indices,
                       Optional<Het_FloatTensor>:$weights);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $expert_output `,` $indices (`,` $weights^)? attr-dict `:` type($expert_output) `,`
    type($indices) (`,` type($weights)^)? `->` type($result)
  }];
}

def Het_MoESlotGradOp : Het_InferredComputeOp<"moe_slot_grad"> {
  let summary = "gradient of the per-choice weights of het.moe_dispatch / het.moe_combine";
  let description = [{
    For each token `t` and choice `j` not dropped, the dot product of
    `tokens[t]` (`[T, D]`) with the row of `expert_rows` (`[E, C, D]`) the
    choice took; zero for dropped choices. For combine, `tokens` is the
    result's gradient and `expert_rows` the experts' output; for dispatch,
    `tokens` is the input and `expert_rows` the result's gradient.

    ```mlir
    %dw = het.moe_slot_grad %dy, %out, %i
        : tensor<32x16xf32>, tensor<4x32x16xf32>, tensor<32x2xi64> -> tensor<32x2xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$tokens, Het_FloatTensor:$expert_rows,
                       Het_IndexTensor:$indices);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $expert_rows `,` $indices attr-dict `:` type($tokens) `,`
    type($expert_rows) `,` type($indices) `->` type($result)
  }];
}

def Het_MoEExpertMatmulOp : Het_InferredComputeOp<"moe_expert_matmul", [Differentiable]> {
  let summary = "the experts' contraction over the rows their tokens filled";
  let description = [{
    `rows` is a dispatch buffer `[E, C, K]`, `weight` `[E, K, N]` (or
    `[E, N, K]` with `transpose_rhs`: stacked `nn.Linear` weights);
    `indices` `[T, k]` is the routing that filled `rows` (or, after
    `het.moe_to_experts`, its `[E]` counts of filled rows). For each expert
    `e`, with `n_e` its choices that were not dropped (slot order: the
    file's header), `result[e, :n_e] = rows[e, :n_e] op(weight[e])` and
    `result[e, n_e:] = 0`: the rows no token took do not affect the result
    (kernels may compute a few of them, and then zero them). Without a capacity (`C = T`) an expert gets `T k / E` rows on
    average, so a padded batched `het.matmul` would do `E / k` times the
    work; this op does what the tokens need (a grouped GEMM, as MegaBlocks
    and Megatron's grouped experts do). The gradient of `rows` is this op
    again (with the weight transposed the other way), of `weight`
    `het.moe_expert_weight_grad`.

    ```mlir
    %h = het.moe_expert_matmul %buf, %w1, %i {transpose_rhs}
        : tensor<4x32x16xf32>, tensor<4x64x16xf32>, tensor<32x2xi64> -> tensor<4x32x64xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$rows, Het_FloatTensor:$weight, Het_IndexTensor:$indices,
                       UnitAttr:$transpose_rhs);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $rows `,` $weight `,` $indices attr-dict `:` type($rows) `,` type($weight) `,`
    type($indices) `->` type($result)
  }];
}

def Het_MoEExpertWeightGradOp : Het_InferredComputeOp<"moe_expert_weight_grad"> {
  let summary = "gradient of het.moe_expert_matmul with respect to its weight";
  let description = [{
    `rows` `[E, C, K]` and `grad_output` `[E, C, N]`; per expert, over its
    `n_e` filled rows only: `rows[e, :n_e]^T grad_output[e, :n_e]`, `[E, K,
    N]`, or its transpose `[E, N, K]` with `transpose_result` (the layout of
    a `transpose_rhs` weight).

    ```mlir
    %dw1 = het.moe_expert_weight_grad %buf, %dh, %i {transpose_result}
        : tensor<4x32x16xf32>, tensor<4x32x64xf32>, tensor<32x2xi64> -> tensor<4x64x16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$rows, Het_FloatTensor:$grad_output,
                       Het_IndexTensor:$indices, UnitAttr:$transpose_result);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $rows `,` $grad_output `,` $indices attr-dict `:` type($rows) `,` type($grad_output) `,`
    type($indices) `->` type($result)
  }];
}

def Het_MoEExpertFractionOp : Het_ComputeOp<"moe_expert_fraction", [Differentiable]> {
  let summary = "the share of routed choices each expert received";
  let description = [{
    `indices` is `[T, k]`; the result `[E]` (E from its type) counts the
    choices of expert `e` over all tokens and slots, divided by `T`: the
    `f_e` of the Switch Transformer / Mixtral load-balancing loss
    `E * sum_e f_e * P_e` (`P_e` the mean router probability), which
    het builds from this op, het.softmax, het.reduce_mean and het.mul.
    Counting has no gradient.

    ```mlir
    %f = het.moe_expert_fraction %i : tensor<32x2xi64> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Het_IndexTensor:$indices);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = "$indices attr-dict `:` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

def Het_MoEToExpertsOp : Het_Op<"moe_to_experts", [Differentiable,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "expert parallelism: each member's dispatched rows to the members holding their experts";
  let description = [{
    `rows` is this member's dispatch buffer `[E, C, X]` (`indices` `[T, k]`
    the routing that filled it); `group` is a stage whose replicas hold the
    experts in order, `experts[m]` of them on member `m` (member 0 the
    first `experts[0]`, ...; they sum to `E`). Each member sends each other
    member the filled rows of that member's experts (and their counts) with
    one all-to-all-v, and receives into `expert_rows` `[E_m, R, X]` (E_m its
    own experts): for each of them the rows of member 0, then of member 1,
    ..., then zeros; `R` is the sum of the members' capacities, known at
    compile time from their shares. `counts` `[E_m]` (i64) says how many rows
    each expert got: the routing of the grouped products that follow
    (`het.moe_expert_matmul`). Its gradient is `het.moe_from_experts`.
    ```mlir
    %r, %n = het.moe_to_experts %buf, %i over @s0 experts [3, 1]
        : tensor<4x32x16xf32>, tensor<32x2xi64> -> tensor<3x64x16xf32>, tensor<3xi64>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$rows, Het_IndexTensor:$indices, SymbolRefAttr:$group,
                       DenseI64ArrayAttr:$experts);
  let results = (outs Het_FloatTensor:$expert_rows, Het_IndexTensor:$counts);
  let assemblyFormat = [{
    $rows `,` $indices `over` $group `experts` $experts attr-dict `:` type($rows) `,`
    type($indices) `->` type($expert_rows) `,` type($counts)
  }];
  let hasVerifier = 1;
}

def Het_MoEFromExpertsOp : Het_Op<"moe_from_experts", [Differentiable,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "expert parallelism: the experts' output rows back to the members whose tokens they are";
  let description = [{
    The transpose of `het.moe_to_experts` with the same `indices`, `group`
    and `experts`: `expert_rows` `[E_m, R, X]` laid out as that op leaves
    them; each member gets back the rows its tokens filled, in its dispatch
    buffer's layout `[E, C, X]` (rows no choice took zero), ready for
    `het.moe_combine`. Its gradient is `het.moe_to_experts`.
    ```mlir
    %out = het.moe_from_experts %y, %i over @s0 experts [3, 1]
        : tensor<3x64x16xf32>, tensor<32x2xi64> -> tensor<4x32x16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$expert_rows, Het_IndexTensor:$indices,
                       SymbolRefAttr:$group, DenseI64ArrayAttr:$experts);
  let results = (outs Het_FloatTensor:$rows);
  let assemblyFormat = [{
    $expert_rows `,` $indices `over` $group `experts` $experts attr-dict `:`
    type($expert_rows) `,` type($indices) `->` type($rows)
  }];
  let hasVerifier = 1;
}

#endif // HET_DIALECT_HET_IR_HETMOEOPS_TD
