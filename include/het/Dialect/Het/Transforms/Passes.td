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

#endif // HET_DIALECT_HET_TRANSFORMS_PASSES_TD
