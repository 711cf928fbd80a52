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
    `het.adam`) takes its gradient averaged over the stage's replicas
    (`het.all_reduce ... avg` with the plan's algorithm); in a step without
    an optimizer, results made by gradient ops (`*_grad`) are averaged
    instead. The function's results become the stages' `het.yield`s, and
    the function is erased (other functions, e.g. the forward one kept for
    inference, stay).

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
           "the function to partition (default: the first with het.layer ops)">
  ];
  let dependentDialects = ["::mlir::het::HetDialect"];
}

#endif // HET_PARTITION_PASSES_TD
