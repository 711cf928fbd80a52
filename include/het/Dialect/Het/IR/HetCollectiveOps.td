//===- HetCollectiveOps.td - collectives over replicas -----*- tablegen -*-===//
//
// All collectives share one base class: an input, the group that takes part
// (a stage's replicas or a device group), an algorithm and a compression
// scheme. Attributes equal to their defaults are not printed.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_IR_HETCOLLECTIVEOPS_TD
#define HET_DIALECT_HET_IR_HETCOLLECTIVEOPS_TD

include "het/Dialect/Het/IR/HetDialect.td"
include "het/Dialect/Het/IR/HetAttrs.td"
include "het/Dialect/Het/IR/HetTypes.td"
include "het/Dialect/Het/IR/HetInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"

/// `extraArgs` follow the input and the group; `format` is the op-specific
/// part of the assembly between the group and the options.
class Het_CollectiveOp<string mnemonic, dag extraArgs, string format,
                       list<Trait> traits = []>
    : Het_Op<mnemonic, !listconcat([
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        Het_CollectiveOpInterface], traits)> {
  let arguments = !con(
      (ins AnyRankedTensor:$input, SymbolRefAttr:$group), extraArgs,
      (ins DefaultValuedAttr<Het_CollectiveAlgorithmAttr,
               "::mlir::het::CollectiveAlgorithm::Auto">:$algorithm,
           DefaultValuedAttr<Het_CompressionKindAttr,
               "::mlir::het::CompressionKind::None">:$compression,
           OptionalAttr<F64Attr>:$topk_ratio));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `over` $group " # format #
      " `` custom<CollectiveOptions>($algorithm, $compression, $topk_ratio)"
      " attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Het_AllReduceOp : Het_CollectiveOp<"all_reduce",
    (ins Het_ReductionKindAttr:$reduction), "`` custom<Reduction>($reduction)",
    [DeclareOpInterfaceMethods<Het_DifferentiableOpInterface>]> {
  let summary = "reduce a tensor over a group; every member gets the result";
  let description = [{
    The gradient all-reduce of data parallelism. `algorithm` is one of
    `auto` (default: hetccl picks by size and topology), `ring`, `tree`,
    `halving_doubling`, `hierarchical` (reduce-scatter inside each vendor
    group, all-reduce across, all-gather inside) and `ps` (sharded parameter
    server). `compression` is `none` (default), `fp16`, `bf16`, `int8`
    (per-chunk scales) or `topk(ratio)` (sparsification with error
    feedback); `int8` and `topk` need a float tensor and `sum` or `avg`.
    Over a group of one member it is its input.

    Over a `het.tensor_parallel_group` it joins the partial sums of a
    split matrix product (Megatron's "reduce from the tensor-parallel
    region"); its gradient is then the result's gradient itself, since
    every member computes the same thing after it.

    Over the `het.cluster` it spans every rank working for the job (each
    stage's replicas and their devices): a decision the whole job must
    share, such as loss scaling's found-inf flag (`max`), so every rank of
    a pipeline skips the same steps.

    ```mlir
    %g = het.all_reduce %dw over @s1 sum algorithm hierarchical compression int8 : tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
    %h = het.all_reduce %dw over @lab::@a100 avg compression topk(0.01) : tensor<1024xf32> -> tensor<1024xf32>
    ```
  }];
}

def Het_ReduceScatterOp : Het_CollectiveOp<"reduce_scatter",
    (ins Het_ReductionKindAttr:$reduction, Het_I64Attr:$axis, UnitAttr:$by_share),
    "`` custom<Reduction>($reduction) `axis` $axis (`by_share` $by_share^)?"> {
  let summary = "reduce over a group and leave each member one slice";
  let description = [{
    The input's `axis` dimension must divide by the group size `n`; the
    result has that dimension divided by `n` (member `i` holds slice `i`).

    With `by_share`, over a stage's replicas (sharded data parallelism,
    het-shard-optimizer): member `i` holds the `ceil(rows * share_i /
    micro-batch)` rows after those of the members before it, where `share_i`
    is its samples of each micro-batch; rows past the end are zeros. Blocks
    follow the batch shares, so replicas of one share (one compiled
    variant) hold blocks of one shape; only the runtime knows the offsets.
    `axis` must be 0.

    ```mlir
    %s = het.reduce_scatter %g over @s0 sum axis 0 : tensor<64x32xf32> -> tensor<16x32xf32>
    %t = het.reduce_scatter %g over @s0 sum axis 0 by_share : tensor<64x32xf32> -> tensor<22x32xf32>
    ```
  }];
}

def Het_AllGatherOp : Het_CollectiveOp<"all_gather", (ins Het_I64Attr:$axis, UnitAttr:$by_share),
    "`axis` $axis (`by_share` $by_share^)?",
    [DeclareOpInterfaceMethods<Het_DifferentiableOpInterface>]> {
  let summary = "concatenate every member's tensor along an axis";
  let description = [{
    The result's `axis` dimension is the input's times the group size.
    Over a `het.tensor_parallel_group` (the logits of a vocabulary-parallel
    output layer) its gradient is each member's slice of the result's
    gradient, computed as a reduce-scatter average of the identical
    gradients every member holds.

    With `by_share` the members' blocks are those of a `by_share`
    reduce-scatter (rows by batch share, zero padding dropped): the
    updated parameter shards of sharded data parallelism, joined.

    ```mlir
    %a = het.all_gather %s over @s0 axis 0 : tensor<16x32xf32> -> tensor<64x32xf32>
    %w = het.all_gather %ws over @s0 axis 0 by_share : tensor<22x32xf32> -> tensor<64x32xf32>
    ```
  }];
}

def Het_ShardOp : Het_Op<"shard", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "this member's block of a tensor every member holds whole";
  let description = [{
    No communication: member `i` of the group (a stage's replicas) takes
    the rows a `by_share` reduce-scatter would leave it, zero-padded past
    the end. Sharded data parallelism updates this block of each parameter
    (het-shard-optimizer).

    ```mlir
    %ws = het.shard %w over @s0 axis 0 : tensor<64x32xf32> -> tensor<22x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, SymbolRefAttr:$group, Het_I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `over` $group `axis` $axis attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Het_BroadcastOp : Het_CollectiveOp<"broadcast", (ins Het_I64Attr:$root),
    "`root` $root"> {
  let summary = "every member gets the tensor of member `root`";
  let description = [{
    ```mlir
    %w = het.broadcast %w0 over @s0 root 0 : tensor<64x64xf32> -> tensor<64x64xf32>
    ```
  }];
}

def Het_AllToAllOp : Het_CollectiveOp<"all_to_all",
    (ins Het_I64Attr:$split_axis, Het_I64Attr:$concat_axis),
    "`split` $split_axis `concat` $concat_axis"> {
  let summary = "split along one axis, exchange, concatenate along another";
  let description = [{
    Member `i` sends slice `j` of its input (split along `split_axis` into
    `n` parts) to member `j`, and concatenates what it receives along
    `concat_axis`. Used by expert and sequence parallelism.

    ```mlir
    %t = het.all_to_all %x over @s0 split 0 concat 1 : tensor<8x16xf32> -> tensor<2x64xf32>
    ```
  }];
}

def Het_TensorParallelCopyOp : Het_Op<"tensor_parallel_copy", [
    SameOperandsAndResultType,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<Het_DifferentiableOpInterface>]> {
  let summary = "a replicated value entering split computation (identity)";
  let description = [{
    Megatron's "copy to the tensor-parallel region": the value is the same
    on every member of `group` and each member computes its part of a split
    product from it. The forward pass does nothing; the gradient is the sum
    of the members' partial gradients, an all-reduce over the group (which
    het-autodiff emits as a `het.all_reduce`). Lowering drops the op.

    ```mlir
    %x1 = het.tensor_parallel_copy %x over @tp2 : tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `over` $group attr-dict `:` type($input)";
}

#endif // HET_DIALECT_HET_IR_HETCOLLECTIVEOPS_TD
