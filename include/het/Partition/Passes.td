//===- Passes.td - het-partition -----------------------------*- tablegen -*-===//
//
// Kept apart from the dialect's own passes: het-partition depends on the
// planner library (lib/Plan), which the dialect does not.
//
//===----------------------------------------------------------------------===//

#ifndef HET_PARTITION_PASSES_TD
#define HET_PARTITION_PASSES_TD

include "mlir/Pass/PassBase.td"

def HetPartition : Pass<"het-partition", "::mlir::ModuleOp"> {
  let summary = "cut a training step into pipeline stages placed on device groups";
  let description = [{
    Rewrites a function whose ops carry `het.layer` (by default the
    training step `@<model>_train_step` that het-autodiff adds, else the
    first such function) into one `het.stage` per stage of a plan: a `het.cluster` built from the plan's device groups
    and links, and for each stage the ops of its layer range, on its device
    group, with its replica count. A value made in one stage and used in
    another leaves through `het.send` right after it is made and enters
    through `het.recv` right before its first use (one channel per tensor
    between a pair of stages). Ops without `het.layer` (constants) are copied
    into every stage that uses them. Each optimizer update (`het.sgd`,
    `het.adam`) takes its gradient combined over the stage's replicas
    (`het.all_reduce` with the plan's algorithm): averaged, or summed when
    `loss-weighted` says each replica's loss is already weighted by its
    share of the micro-batch (what het-compile builds, and what stages with
    uneven shares need); in a step without an optimizer, results made by
    gradient ops (`*_grad`) are combined instead. The function's results
    become the stages' `het.yield`s, and the function is erased (other
    functions, e.g. the forward one kept for inference, stay).

    Each stage lists its replicas by device group with their share of a
    micro-batch (the plan's `replica_groups`, or even shares of
    `global_batch / micro_batches`) and its `tensor_parallel` degree. In a
    stage with several replicas, batch normalization uses the statistics of
    the whole micro-batch (as SyncBatchNorm does): each `het.batch_norm`
    and its gradient become per-channel sums, `het.all_reduce`s of them over
    the stage, and element-wise normalization.

    The plan is a JSON file written by `het-plan --write-plan` (format in
    docs/planner.md), or `auto`: run the planner on the IR's own layer costs
    and the cluster spec given by `cluster`.

    ```
    het-opt --het-partition="plan=examples/plans/mlp-mixed-node.json" step.mlir
    het-opt --het-partition="plan=auto cluster=examples/clusters/mixed-node.json" step.mlir
    ```
  }];
  let options = [
    Option<"planFile", "plan", "std::string", "\"auto\"",
           "plan JSON (het-plan --write-plan), or `auto` to run the planner">,
    Option<"clusterFile", "cluster", "std::string", "\"\"",
           "cluster spec JSON (needed by plan=auto)">,
    Option<"globalBatch", "global-batch", "int64_t", "0",
           "samples per iteration for plan=auto (default: the IR's batch)">,
    Option<"functionName", "function", "std::string", "\"\"",
           "the function to partition (default: the first with het.layer ops)">,
    Option<"microBatchSamples", "micro-batch-samples", "int64_t", "0",
           "samples per micro-batch that the stages share (default: the plan's "
           "global_batch / micro_batches)">,
    Option<"lossWeighted", "loss-weighted", "bool", "false",
           "each replica's loss is weighted by its share of the micro-batch: sum "
           "gradients over replicas instead of averaging them">,
    ListOption<"tensorParallelSplit", "tensor-parallel-split", "std::string",
               "the step's parameters that het-tensor-parallel split (their gradients "
               "differ on each device of a replica; the others' are equal on all): "
               "gradient clipping counts the others' squares once per replica">
  ];
  let dependentDialects = ["::mlir::het::HetDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def HetPipelineSchedule : Pass<"het-pipeline-schedule", "::mlir::ModuleOp"> {
  let summary = "order the forward and backward passes of each stage's micro-batches";
  let description = [{
    For each `het.stage` (in pipeline order) records the order in which it
    runs the forward (`F<i>`) and backward (`B<i>`) passes of the step's
    `micro-batches` micro-batches, as `het.schedule` and
    `het.micro_batches` on the stage. The runtime follows that order;
    gradients of a stage's micro-batches are summed and averaged before the
    stage's all-reduce and update, so any order computes the same step.

    `gpipe`: every forward, then every backward (M activations in flight).
    `1f1b` (default): stage j of S runs min(S-1-j, M) warm-up forwards,
    then alternates one forward and one backward, then drains the
    remaining backwards -- at most S-j micro-batches of activations are
    alive, the schedule of PipeDream-Flush and Megatron-LM.

    ```
    het-opt --het-pipeline-schedule="schedule=1f1b micro-batches=4" partitioned.mlir
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "`1f1b` or `gpipe`">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "micro-batches per step (each of the model's batch size)">
  ];
  let dependentDialects = ["::mlir::het::HetDialect"];
}

def HetShardOptimizer : Pass<"het-shard-optimizer", "::mlir::ModuleOp"> {
  let summary = "sharded data parallelism (ZeRO-1/2/3): each replica keeps and updates a block of the optimizer state, gradients and parameters";
  let description = [{
    Runs on partitioned stages (after `het-partition`). In every stage of
    more than one replica, each optimizer step
    `het.adam`/`het.sgd` whose gradient is the stage's all-reduce and whose
    state (Adam's moments, SGD's momentum buffer) is the stage's own becomes

    ```mlir
    %gs = het.reduce_scatter %dw over @s0 sum axis 0 by_share : tensor<128x64xf32> -> tensor<44x64xf32>
    %ws = het.shard %w over @s0 axis 0 : tensor<128x64xf32> -> tensor<44x64xf32>
    %ws1, %m1, %v1 = het.adam %ws, %gs, %m, %v, %step : tensor<44x64xf32>, tensor<i64>
    %w1 = het.all_gather %ws1 over @s0 axis 0 by_share : tensor<44x64xf32> -> tensor<128x64xf32>
    ```

    so each replica holds its block of the state only (the stage's
    arguments and results take the block's type), and the gradient's
    all-reduce becomes a reduce-scatter and an all-gather of the same
    bytes (`level=1`, ZeRO-1).

    `level=2` (ZeRO-2) reduce-scatters each micro-batch's gradient in the
    backward pass (the reduce-scatter carries `het.backward`), so only a
    block of the gradient is accumulated between micro-batches; it sends
    the gradient once per micro-batch instead of once per step.

    `level=3` (ZeRO-3, FSDP) also holds each parameter in blocks: the
    forward and the backward each all-gather it just before their first
    use (and drop it after their last), and the update takes the block,
    with no `het.shard` and no gather after it. Blocks are rows along the first dimension, sized by each
    replica's share of the micro-batch (ShareBlocks.h): `samples` is the
    share of the replicas this copy of the stages is compiled for. Tensors
    of rank 0, and those where some replica's block would be empty, stay
    whole. Each stage lists its sharded state in `het.sharded_state`.

    With tensor parallelism the stage's tensors are already each rank's
    part, and `@stage` groups the replicas holding the same part: blocks
    are rows of the part, sharded over those replicas.
  }];
  let options = [
    Option<"samples", "samples", "int64_t", "0",
           "samples of each micro-batch the replicas of this copy take (required)">,
    Option<"level", "level", "int64_t", "1",
           "1: optimizer state in blocks (ZeRO-1); 2: and each micro-batch's gradient "
           "(ZeRO-2); 3: and the parameters, gathered per pass (ZeRO-3)">,
    ListOption<"stageLevels", "stage-levels", "int64_t",
               "each stage's level in pipeline order, 0 to leave one whole (stages past "
               "the list take `level`)">
  ];
  let dependentDialects = ["::mlir::het::HetDialect"];
}

#endif // HET_PARTITION_PASSES_TD
