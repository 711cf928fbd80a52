//===- HetDialect.td - the het dialect ---------------------*- tablegen -*-===//
//
// The dialect definition and the base class of every het op.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_IR_HETDIALECT_TD
#define HET_DIALECT_HET_IR_HETDIALECT_TD

include "mlir/IR/OpBase.td"

def Het_Dialect : Dialect {
  let name = "het";
  let cppNamespace = "::mlir::het";
  let summary = "Training graphs with placement and collectives for heterogeneous clusters";
  let description = [{
    The `het` dialect represents one training job for a cluster that mixes
    chips of several vendors (NVIDIA, AMD, Ascend-class NPUs, CPUs).

    It has three families of operations, all on builtin `tensor` values with
    value semantics (no op carries hidden state):

    * **compute**: forward ops (`het.linear`, `het.conv2d`, `het.batch_norm`,
      `het.softmax`, ...), their gradient ops (`het.linear_grad`, ...), fused
      ops made by `het-fuse` (`het.batch_norm_relu`) and optimizer updates
      (`het.sgd`, `het.adam`);
    * **structure and placement**: `het.cluster` holds `het.device_group`s and
      `het.link`s; `het.stage` is one pipeline stage bound to a device group,
      with a replica count and a layer range; `het.send`/`het.recv` move
      activations between stages; `het.transfer` changes device kind;
    * **collectives**: `het.all_reduce`, `het.all_gather`,
      `het.reduce_scatter`, `het.broadcast`, `het.all_to_all`, all derived
      from one base class, with a reduction kind, an algorithm and a
      compression scheme.

    Two discardable attributes connect the model to the planner:
    `het.layer = N` on an op assigns it to layer `N` (the unit of pipeline
    partitioning) and `het.param` on a function argument marks a trainable
    parameter. `het.name = "..."` names a function argument or result (the
    key runners use in `.npz` files) and `het.state` marks optimizer state.
  }];

  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;

  let extraClassDeclaration = [{
    /// Discardable attribute naming the layer an op belongs to.
    static constexpr ::llvm::StringLiteral getLayerAttrName() {
      return ::llvm::StringLiteral("het.layer");
    }
    /// Discardable unit attribute marking a trainable function argument.
    static constexpr ::llvm::StringLiteral getParamAttrName() {
      return ::llvm::StringLiteral("het.param");
    }
    /// Discardable string attribute naming a function argument or result,
    /// e.g. a PyTorch parameter name. Runners (het-eval, compiled steps) use
    /// it as the key in .npz files and to feed a training step's updated
    /// parameters back into the next step.
    static constexpr ::llvm::StringLiteral getNameAttrName() {
      return ::llvm::StringLiteral("het.name");
    }
    /// Discardable unit attribute marking an optimizer-state argument
    /// (momentum, Adam moments, step); runners start it at zero.
    static constexpr ::llvm::StringLiteral getStateAttrName() {
      return ::llvm::StringLiteral("het.state");
    }
    /// Discardable unit attribute het-partition puts on ops (and on the
    /// send/recv pairs) of the backward pass, so the pipeline lowering can
    /// run forward and backward of different micro-batches separately.
    static constexpr ::llvm::StringLiteral getBackwardAttrName() {
      return ::llvm::StringLiteral("het.backward");
    }
    /// Discardable array of strings on a `het.stage`: the names of its
    /// body's arguments (`het.arg_names`) and of its yielded values
    /// (`het.result_names`), the step's own argument/result names.
    static constexpr ::llvm::StringLiteral getArgNamesAttrName() {
      return ::llvm::StringLiteral("het.arg_names");
    }
    static constexpr ::llvm::StringLiteral getResultNamesAttrName() {
      return ::llvm::StringLiteral("het.result_names");
    }
    /// Discardable unit attribute het-recompute puts on the forward ops it
    /// clones into the backward. Besides saying so, it keeps CSE (which
    /// compares attributes) from merging a clone back into its original.
    static constexpr ::llvm::StringLiteral getRecomputedAttrName() {
      return ::llvm::StringLiteral("het.recomputed");
    }
    /// Discardable attributes het-pipeline-schedule puts on a `het.stage`:
    /// the micro-batch count and the order of its forward (F<i>) and
    /// backward (B<i>) passes.
    static constexpr ::llvm::StringLiteral getMicroBatchesAttrName() {
      return ::llvm::StringLiteral("het.micro_batches");
    }
    static constexpr ::llvm::StringLiteral getScheduleAttrName() {
      return ::llvm::StringLiteral("het.schedule");
    }
    /// Discardable string on a function: the CPU kernel library its ops
    /// lower to ("dnnl", "reference" or "mlir"), set per pipeline stage
    /// from the stage's device kind.
    static constexpr ::llvm::StringLiteral getKernelLibraryAttrName() {
      return ::llvm::StringLiteral("het.kernel_library");
    }
    /// Discardable 64-bit integer on het.linear / het.linear_grad: a bit per
    /// matrix product run on OpenBLAS instead of oneDNN, set by het-compile
    /// --tuning-db (het/Tune/GemmProducts.h says which bit is which).
    static constexpr ::llvm::StringLiteral getGemmEnginesAttrName() {
      return ::llvm::StringLiteral("het.gemm_engines");
    }

  }];
}

class Het_Op<string mnemonic, list<Trait> traits = []>
    : Op<Het_Dialect, mnemonic, traits>;

#endif // HET_DIALECT_HET_IR_HETDIALECT_TD
