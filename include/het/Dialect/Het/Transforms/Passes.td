//===- Passes.td - passes on the het dialect ---------------*- tablegen -*-===//

#ifndef HET_DIALECT_HET_TRANSFORMS_PASSES_TD
#define HET_DIALECT_HET_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def HetInferLayers : Pass<"het-infer-layers", "func::FuncOp"> {
  let summary = "give every compute op a het.layer";
  let description = [{
    The partitioner cuts a model between layers, so every compute op must
    belong to one. Importers and hand-written models usually annotate only
    some ops (the first op of each block). This pass gives each het compute
    op without `het.layer` the largest layer among the ops that produce its
    operands (an op belongs to the deepest layer it depends on), or
    `default-layer` when none of its operands is produced by an annotated op.
    Existing annotations are kept.

    ```mlir
    // before
    %h = het.linear %x, %w1 {het.layer = 0 : i64} : ...
    %a = het.relu %h : ...
    // after
    %a = het.relu %h {het.layer = 0 : i64} : ...
    ```
  }];
  let options = [
    Option<"defaultLayer", "default-layer", "int64_t", "0",
           "layer for ops with no annotated producer">
  ];
  let dependentDialects = ["::mlir::het::HetDialect"];
}

def HetRebatch : Pass<"het-rebatch", "ModuleOp"> {
  let summary = "specialise a model to another batch size, weighting its loss by its share";
  let description = [{
    A model's declared batch size is only a default. This pass gives the
    forward model (`function`, else the first function returning a 0-d float
    loss) `samples` samples per call: every data argument whose first
    dimension is the model's batch (the first dimension of its first
    non-parameter argument) gets `samples`, and every result type downstream
    follows (ShapeRespecialization.h: reshapes that fold the batch into
    another dimension, broadcasts that add it).

    With `micro-batch` M (a pipeline replica that takes `samples` of every
    micro-batch of M samples), the loss is multiplied by `samples / M`: a
    replica's loss is then its share of the micro-batch's mean loss, so the
    replicas' gradients add up (an all-reduce sum) to the gradient of the
    whole micro-batch, however unevenly it was split. This assumes the loss
    is a mean over samples (plus terms that do not depend on them), as
    cross-entropy is.

    ```
    het-opt --het-rebatch="samples=48 micro-batch=64" mlp.mlir
    ```
  }];
  let options = [
    Option<"samples", "samples", "int64_t", "0", "samples per call (required)">,
    Option<"microBatch", "micro-batch", "int64_t", "0",
           "samples of the micro-batch this call takes a share of (default: samples)">,
    Option<"function", "function", "std::string", "\"\"",
           "the forward model (default: the first function returning a 0-d float loss)">
  ];
  let dependentDialects = ["::mlir::het::HetDialect", "::mlir::arith::ArithDialect"];
}

def HetExpertParallel : Pass<"het-expert-parallel", "ModuleOp"> {
  let summary = "spread a stage's mixture-of-experts experts over its replicas";
  let description = [{
    For each entry of `stages` (`NAME:BEGIN:END:EXPERTS:SHARES:MEMBER`:
    the stage `NAME` over layers [BEGIN, END); `EXPERTS` the experts each of
    its replicas holds and `SHARES` the samples of each micro-batch it
    takes, both `/`-separated in replica order; `MEMBER` the replica this
    build is for), every mixture-of-experts layer there (`het.moe_dispatch`
    ... `het.moe_combine`) runs its experts where they are held:
    `het.moe_to_experts` after the dispatch, the experts' products on this
    replica's experts (with the received counts as their routing),
    `het.moe_from_experts` before the combine. An expert weight that is one
    parameter of all experts (`[E, ...]`) takes this replica's block's shape
    and is marked `het.expert_parallel` (the runtime places the block);
    experts that are parameters of their own (PyTorch's per-expert
    `nn.Linear`, joined by het.concat) are joined for this replica's
    experts only, and the others' parameters leave its model. Run it on the
    forward model after het-rebatch and before het-autodiff: the
    exchanges' gradient rules give the backward pass its all-to-alls. The
    ops between dispatch and combine must work expert by expert (the
    grouped products and element-wise ops); anything else is an error
    naming the op.

    ```
    het-opt --het-expert-parallel="stages=s0:0:2:3/1:4/4:0 samples=4" mixtral.mlir
    ```
  }];
  let options = [
    ListOption<"stages", "stages", "std::string",
               "NAME:BEGIN:END:EXPERTS:SHARES:MEMBER per stage with expert parallelism">,
    Option<"samples", "samples", "int64_t", "0",
           "samples of each micro-batch the model takes (its batch after het-rebatch)">,
    Option<"function", "function", "std::string", "\"\"",
           "the forward model (default: the first function)">
  ];
  let dependentDialects = ["::mlir::het::HetDialect"];
}

def HetTensorParallel : Pass<"het-tensor-parallel", "ModuleOp"> {
  let summary = "split a model's matrices over the devices of a replica (Megatron-style)";
  let description = [{
    Splits the forward model (`function`, else the first function) over
    tensor-parallel devices, each layer by its degree (`layer-degrees`, one
    entry per layer, else `degree` for all): column-parallel linear layers
    (their input through `het.tensor_parallel_copy`), row-parallel ones
    joined by `het.all_reduce` over a `het.tensor_parallel_group`, attention
    split by heads, embeddings split by vocabulary, and `het.all_gather`
    wherever an op needs a split value whole (the loss of a split output
    layer). The split parameters take their shard's shape; every device of
    a replica runs the result on its own shard. Run it before het-autodiff:
    the collectives' gradient rules give the backward pass its collectives.
    See TensorParallel.h for the rules.

    ```
    het-opt --het-tensor-parallel="degree=2" gpt.mlir
    het-opt --het-tensor-parallel="layer-degrees=2,2,1,1 layer-segments=0,0,1,1" gpt.mlir
    ```
  }];
  let options = [
    Option<"degree", "degree", "int64_t", "2", "devices per replica, for every layer">,
    ListOption<"layerDegrees", "layer-degrees", "int64_t",
               "devices per replica of each layer (overrides degree)">,
    ListOption<"layerSegments", "layer-segments", "int64_t",
               "the pipeline stage of each layer: split values stay inside one "
               "(default: the whole model is one)">,
    Option<"function", "function", "std::string", "\"\"",
           "the forward model (default: the first function)">
  ];
  let dependentDialects = ["::mlir::het::HetDialect"];
}

def HetFuseAttention : Pass<"het-fuse-attention", "func::FuncOp"> {
  let summary = "fuse matmul + softmax + matmul into het.attention (before autodiff)";
  let description = [{
    `het.matmul %q, %k {transpose_rhs}` (or of `%k` transposed by
    `het.transpose`) whose only user is a `het.softmax` over the last axis,
    whose only user is `het.matmul %p, %v`, becomes one
    `het.attention %q, %k, %v` with the softmax's `scale` and `causal`. Runs
    on the forward model, before `het-autodiff`: the fused op's gradient is
    `het.attention_grad`, which recomputes the probabilities instead of
    keeping them, so neither direction materializes `[..., Q, K]` when the
    ops run as one kernel (libhetrt's `hetrt_dnnl_attention`). Where no such
    kernel exists (generated kernels, GPU builds) convert-het-to-linalg
    writes the op as the three ops again, reusing the forward's
    probabilities in the gradient where both are in one function.
    `het-training-pipeline{fuse-attention=...}` runs it; het-compile turns it
    on for CPU builds with oneDNN kernels.
  }];
  let dependentDialects = ["::mlir::het::HetDialect"];
}

def HetAutocast : Pass<"het-autocast", "func::FuncOp"> {
  let summary = "mixed precision: run matrix products in bf16 or f16, the rest as PyTorch autocast does";
  let description = [{
    Runs on the forward model, before `het-autodiff`, and applies PyTorch's
    autocast policy (`aten/src/ATen/autocast_mode.cpp`, its CPU lists) by
    inserting `het.cast`:

    - **low precision** (`precision`): `het.matmul`, `het.linear`,
      `het.conv2d`, `het.attention` -- PyTorch's mm/bmm/addmm/linear/
      matmul/conv/scaled_dot_product_attention. Their float operands are
      cast to bf16 (or f16) and so are their results; their gradients,
      which autodiff builds from the same operands, run in it too.
    - **f32**: losses (`het.cross_entropy`), normalizations (batch, layer
      and RMS norm), `het.softmax`, reductions, and `het.elementwise`
      chains: low operands are cast up, results are f32.
    - **everything else** (activations, element-wise arithmetic, pooling,
      shape ops, embeddings, dropout) runs in its operands' format; mixed
      operands are promoted to the widest, as PyTorch's type promotion does.

    With `layer-precisions`, each layer's products run in that layer's
    format (a pipeline whose stages train on kinds of different formats:
    fp16 on a V100 stage, bf16 on an A100 one); a value passing from a
    layer of one format to a product of another is cast to the other.

    With `f32-boundaries`, a 16-bit value made in a layer below a listed
    layer and read at or above it is cast to f32 in the layer that makes
    it: the end of a pipeline stage whose replicas train in different
    formats (one on an fp16 kind, one on a bf16 kind), so that what the
    stage sends is f32 whichever replica computed it, and every receiver
    rounds it to its own format.

    Parameters stay f32: each use in a low-precision op reads a cast copy,
    whose gradient (`het.cast` of the gradient back) arrives in f32, so the
    master weights, their gradients and the optimizer state are f32.
    Function results keep their declared types.

    ```mlir
    %y = het.linear %x, %w, %b : ... -> tensor<32x128xf32>
    // becomes
    %x16 = het.cast %x : tensor<32x64xf32> -> tensor<32x64xbf16>
    %w16 = het.cast %w : tensor<128x64xf32> -> tensor<128x64xbf16>
    %b16 = het.cast %b : tensor<128xf32> -> tensor<128xbf16>
    %y = het.linear %x16, %w16, %b16 : ... -> tensor<32x128xbf16>
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"bf16\"",
           "the low format: bf16 or fp16 (fp32: none, for layers not in layer-precisions)">,
    ListOption<"layerPrecisions", "layer-precisions", "std::string",
               "the low format of each layer's products (het.layer index: fp32, bf16 or "
               "fp16), for jobs whose device kinds train in different formats; layers past "
               "the list and unlayered ops take `precision`">,
    ListOption<"f32Boundaries", "f32-boundaries", "int64_t",
               "layers (het.layer indices) that 16-bit values from earlier layers reach in "
               "f32: the ends of pipeline stages whose replicas differ in format">
  ];
  let dependentDialects = ["::mlir::het::HetDialect"];
}

def HetRecompute : Pass<"het-recompute", "func::FuncOp"> {
  let summary = "activation recomputation: the backward recomputes forward values instead of keeping them";
  let description = [{
    Runs on a training step (a function whose first result is named
    `loss`, as `het-autodiff` builds it), after `het-autodiff`. The forward
    is every op up to the one that computes the loss; the rest is the
    backward and the update. A forward value the backward reads is kept in
    memory from the forward to its last backward use; with recomputation
    the backward clones the forward ops that compute it, just before its
    first use there, from values that are kept anyway, and the forward's
    copy dies in the forward.

    Per layer (`het.layer`), `mode` (or that layer's entry in `layer-modes`):

    - **none**: everything the backward reads stays in memory.
    - **full**: only each layer's inputs stay (values other layers, or the
      loss, read, parameters, data): the backward recomputes the whole
      layer from them, as `torch.utils.checkpoint` around each block.
    - **selective**: the matrix products' and convolutions' results stay
      (`het.linear`, `het.matmul`, `het.conv2d`); what the backward
      recomputes is the cheap, memory-heavy rest: the attention core (its
      [B, H, T, T] scores and softmax), norms, element-wise chains,
      activations, dropout, casts -- Megatron's selective recomputation.

    The clones carry `het.recomputed`, so CSE, which compares attributes,
    never merges them back into the forward's ops. Every het op is a
    function of its operands and attributes (dropout's mask is Philox of
    its `seed`, `stream` and the element's index), so the recomputed values
    are bit for bit the kept ones, and the training trace is unchanged.
    With `report`, a remark says how many ops are recomputed and how many
    bytes the forward keeps for the backward before and after.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"full\"",
           "none | selective | full, for layers past `layer-modes`">,
    ListOption<"layerModes", "layer-modes", "std::string",
               "each layer's mode by het.layer index (none, selective or full)">,
    Option<"report", "report", "bool", "false",
           "remark on what is recomputed and the bytes kept for the backward">
  ];
  let dependentDialects = ["::mlir::het::HetDialect"];
}

def HetAutodiff : Pass<"het-autodiff", "ModuleOp"> {
  let summary = "build the training step of a model: gradients and optimizer update";
  let description = [{
    For every function that returns a scalar loss and has `het.param`
    arguments (or only `function` when given), adds `@<name>_train_step`:
    the forward computation, reverse-mode gradients of the loss with respect
    to every parameter, and the optimizer update. The original function is
    left untouched for inference.

    The step takes the original arguments followed by the optimizer state
    (`het.state` arguments named `<param>.momentum_buffer`, or
    `<param>.exp_avg`, `<param>.exp_avg_sq` and `adam.step`) and returns the
    loss (named `loss`), then each updated parameter and state under the
    name of the argument it replaces, so a runner feeds results back by name
    (`het-eval --steps`). With `optimizer=none` it returns the loss and the
    gradients (`<param>.grad`) instead.

    Each op's gradient rule comes from `DifferentiableOpInterface`; an op on
    the path from a parameter to the loss without one is an error naming it.
    Backward ops inherit the `het.layer` of their forward op, and updates the
    layer of the parameter's first use, so the partitioner keeps them
    together.

    With `loss-scale` (fp16) the step scales as `torch.amp.GradScaler` does:
    the backward starts from the scale (`init-scale` times the state
    `amp.scale_ratio`, which starts at 1), `het.unscale_gradients` divides
    the parameters' gradients by it and reports inf/NaN, every update is
    kept only when none was found (`het.select`; Adam's step count too),
    and `het.loss_scale_update` backs the scale off or grows it
    (`amp.growth_tracker` counts the good steps).

    With `clip-grad-norm` the (unscaled) gradients are clipped as
    `torch.nn.utils.clip_grad_norm_` clips them before the updates:
    `het.squared_norm` over all of them, then `het.clip_by_norm` scales
    every gradient by `min(1, max_norm / (norm + 1e-6))`.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"\"",
           "only differentiate this function (default: every function with het.param arguments)">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd | adam | none (gradients only)">,
    Option<"learningRate", "learning-rate", "double", "0.01", "learning rate">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD with Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "L2 penalty (SGD, Adam) or decoupled decay (AdamW)">,
    Option<"beta1", "beta1", "double", "0.9", "Adam first-moment decay">,
    Option<"beta2", "beta2", "double", "0.999", "Adam second-moment decay">,
    Option<"epsilon", "epsilon", "double", "1.0e-8", "Adam denominator term">,
    Option<"decoupled", "decoupled", "bool", "false", "AdamW: decoupled weight decay">,
    Option<"lossScale", "loss-scale", "bool", "false",
           "dynamic loss scaling as torch.amp.GradScaler (for fp16)">,
    Option<"initScale", "init-scale", "double", "65536.0", "the first loss scale">,
    Option<"growthFactor", "growth-factor", "double", "2.0",
           "the scale's factor after growth-interval good steps">,
    Option<"backoffFactor", "backoff-factor", "double", "0.5",
           "the scale's factor after a step with inf or NaN gradients">,
    Option<"growthInterval", "growth-interval", "int64_t", "2000",
           "good steps in a row before the scale grows">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0.0",
           "clip the gradients' global 2-norm to this before the updates (0: no clipping)">
  ];
  let dependentDialects = ["::mlir::het::HetDialect", "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect", "::mlir::math::MathDialect"];
}

def HetFuse : Pass<"het-fuse", "func::FuncOp"> {
  let summary = "fuse operators: BatchNorm+ReLU, linear+bias+activation, element-wise chains, conv+BN folding";
  let description = [{
    Rewrites a (forward or training) function so that fewer, larger kernels
    run. Each fusion applies only where it is legal, i.e. where no other op
    reads the intermediate value that would disappear:

    * `bn-relu`: `het.batch_norm` whose output is only read by `het.relu`
      becomes `het.batch_norm_relu`; in a training step the backward pair
      `het.relu_grad` + `het.batch_norm_grad` becomes
      `het.batch_norm_relu_grad`, which takes the relu mask from the saved
      output instead of storing it.
    * `linear-activation`: `het.linear` (or `het.matmul` by a plain weight,
      plus a `het.add` of a bias) followed by `het.relu`/`het.gelu` becomes
      one `het.linear` with `activation`.
    * `elementwise`: a chain of element-wise ops (`add`, `sub`, `mul`,
      `relu`, `gelu`, `relu_grad`) of the same result shape becomes one
      `het.elementwise` with a scalar body.
    * `conv-bn-fold` (inference): `het.conv2d` followed by
      `het.batch_norm_inference` becomes one `het.conv2d` with bias whose
      filter and bias are rescaled (computed in the IR, so the result stays
      exact for any parameter values).

    Every fusion can be switched off, e.g. `--het-fuse="elementwise=false"`.
  }];
  let options = [
    Option<"bnRelu", "bn-relu", "bool", "true", "fuse batch_norm + relu (and their gradients)">,
    Option<"linearActivation", "linear-activation", "bool", "true",
           "fuse linear/matmul + bias + relu/gelu">,
    Option<"elementwise", "elementwise", "bool", "true",
           "fuse chains of element-wise ops into het.elementwise">,
    Option<"convBnFold", "conv-bn-fold", "bool", "true",
           "fold batch_norm_inference into the preceding conv2d">
  ];
  let dependentDialects = ["::mlir::het::HetDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // HET_DIALECT_HET_TRANSFORMS_PASSES_TD
