//===- HetStructureOps.td - cluster, placement and stages --*- tablegen -*-===//
//
// The cluster a job runs on, the pipeline stages it is cut into, and the
// point-to-point moves between stages and device kinds.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_IR_HETSTRUCTUREOPS_TD
#define HET_DIALECT_HET_IR_HETSTRUCTUREOPS_TD

include "het/Dialect/Het/IR/HetDialect.td"
include "het/Dialect/Het/IR/HetAttrs.td"
include "het/Dialect/Het/IR/HetTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"

//===----------------------------------------------------------------------===//
// Cluster
//===----------------------------------------------------------------------===//

def Het_ClusterOp : Het_Op<"cluster", [Symbol, SymbolTable, IsolatedFromAbove,
    NoTerminator, SingleBlock, NoRegionArguments]> {
  let summary = "the devices a job may use and the links between them";
  let description = [{
    A module-level symbol holding `het.device_group`s and `het.link`s, and
    nothing else. Stages and collectives name its groups with nested symbol
    references (`@lab::@a100`). The planner builds it from a cluster spec
    (JSON); it can also be written by hand.

    ```mlir
    het.cluster @lab {
      het.device_group @a100 kind #het.device<nvidia, "sm_80"> count 8 memory_gib 80.0
      het.device_group @mi250 kind #het.device<amd, "gfx90a"> count 8 memory_gib 64.0
      het.link @a100, @a100 bandwidth_gbps 4800.0 latency_us 2.0
      het.link @a100, @mi250 bandwidth_gbps 200.0 latency_us 5.0
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

def Het_DeviceGroupOp : Het_Op<"device_group", [Symbol, HasParent<"ClusterOp">]> {
  let summary = "identical devices that a stage can be placed on";
  let description = [{
    `count` devices of one `kind`, each with `memory_gib` GiB of memory,
    spread evenly over `nodes` machines (default 1).

    ```mlir
    het.device_group @ascend kind #het.device<ascend, "ascend910b"> count 64 memory_gib 64.0 {nodes = 8 : i64}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Het_DeviceKindAttr:$kind,
      Het_I64Attr:$count, F64Attr:$memory_gib,
      DefaultValuedAttr<Het_I64Attr, "1">:$nodes);
  let assemblyFormat = [{
    $sym_name `kind` qualified($kind) `count` $count `memory_gib` $memory_gib attr-dict
  }];
  let hasVerifier = 1;
}

def Het_LinkOp : Het_Op<"link", [HasParent<"ClusterOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a bidirectional link between two device groups";
  let description = [{
    Bandwidth in gigabits per second and latency in microseconds of the path
    between a device of `lhs` and a device of `rhs`. A link from a group to
    itself describes the group's internal fabric (NVLink, xGMI, HCCS).

    ```mlir
    het.link @a100, @mi250 bandwidth_gbps 200.0 latency_us 5.0
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$lhs, FlatSymbolRefAttr:$rhs,
                       F64Attr:$bandwidth_gbps, F64Attr:$latency_us);
  let assemblyFormat = [{
    $lhs `,` $rhs `bandwidth_gbps` $bandwidth_gbps `latency_us` $latency_us attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Stages
//===----------------------------------------------------------------------===//

def Het_StageOp : Het_Op<"stage", [Symbol, IsolatedFromAbove,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "one pipeline stage placed on one or more device groups";
  let description = [{
    The code that the data-parallel replicas of one pipeline stage run, for
    the layers `[layer_begin, layer_end)`. The replicas are listed by device
    group (`replica_groups`): each group contributes `replicas` copies, each
    taking `samples` samples of every micro-batch (omitted: an even share).
    Replicas of one stage may be of different kinds, each with a share that
    suits its speed; the shares of every stage add up to the micro-batch.
    Each replica spans `tensor_parallel` devices of its group (default 1),
    which split its matrices (het-tensor-parallel).

    The body's arguments are the stage's inputs (its parameters, optimizer
    state and, for the first stage, the batch); `het.yield` returns its
    outputs. Activations enter through `het.recv` and leave through
    `het.send`. Every op in the body that carries `het.layer` must lie in
    the stage's layer range.

    ```mlir
    het.stage @s0 on @lab::@a100 replicas 8 layers [0, 14) (%w: tensor<64x64xf32>) {
      ...
      het.send %act to @s1 : tensor<8x64xf32>
      het.yield %w1 : tensor<64x64xf32>
    }
    het.stage @s1 on @lab::@a100 replicas 1 samples 48, @lab::@mi250 replicas 1 samples 16
        layers [14, 24) tensor_parallel 2 { ... }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
      TypedArrayAttrBase<Het_ReplicaGroupAttr, "replica groups">:$replica_groups,
      Het_I64Attr:$layer_begin, Het_I64Attr:$layer_end,
      DefaultValuedAttr<Het_I64Attr, "1">:$tensor_parallel);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name,
                   "::llvm::ArrayRef<::mlir::het::ReplicaGroupAttr>":$replicaGroups,
                   "int64_t":$layerBegin, "int64_t":$layerEnd, "int64_t":$tensorParallel,
                   "::mlir::TypeRange":$argumentTypes)>
  ];
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    YieldOp getYield();
    /// The replica groups, typed.
    ::llvm::SmallVector<::mlir::het::ReplicaGroupAttr> getReplicaGroupList();
    /// All data-parallel replicas of the stage, over every group.
    int64_t getReplicas();
    /// Samples per micro-batch over all replicas; 0 when the shares are
    /// not given (even split).
    int64_t getMicroBatchSamples();
  }];
}

def Het_TensorParallelGroupOp : Het_Op<"tensor_parallel_group", [Symbol]> {
  let summary = "the devices that run one replica of a stage together";
  let description = [{
    A module-level symbol for the `size` devices over which
    het-tensor-parallel splits the matrices of one replica (Megatron-style
    tensor parallelism). Collectives over it join the partial results of
    those devices; their gradient rules assume, as Megatron does, that what
    follows them is computed identically on every member. After partitioning,
    a collective over it inside a `het.stage` is among the tensor-parallel
    ranks of the replica running that stage.

    ```mlir
    het.tensor_parallel_group @tp2 size 2
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Het_I64Attr:$size);
  let assemblyFormat = "$sym_name `size` $size attr-dict";
  let hasVerifier = 1;
}

def Het_TiedGroupOp : Het_Op<"tied_group", [Symbol]> {
  let summary = "the stages that hold copies of one tied parameter";
  let description = [{
    A module-level symbol for the ranks of `stages` (every replica of
    each), made by het-partition when a pipeline cuts between the layers
    of a tied parameter (GPT-2's token embedding and output head). Each of
    those stages keeps its own copy of the parameter and its optimizer
    state, accumulates its own layers' part of the gradient over the
    micro-batches, and in the update sums the parts with one all-reduce
    over this group (once per step, as Megatron's embedding group does);
    every copy then takes the same update.

    ```mlir
    het.tied_group @tied_s0_s1 stages [@s0, @s1]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefArrayAttr:$stages);
  let assemblyFormat = "$sym_name `stages` $stages attr-dict";
  let hasVerifier = 1;
}

def Het_YieldOp : Het_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["StageOp", "ElementwiseOp"]>]> {
  let summary = "the outputs of a stage, or the element a fused body computes";
  let description = [{
    ```mlir
    het.yield %w1, %loss : tensor<64x64xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

def Het_SendOp : Het_Op<"send", [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "send a tensor to the next (or previous) stage";
  let description = [{
    Pairs with the `het.recv` in stage `target` that names this op's stage
    as its source and has the same `channel` (default 0) and type.
    Different tensors between the same two stages use different channels.

    ```mlir
    het.send %act to @s1 : tensor<8x1024xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, FlatSymbolRefAttr:$target,
                       DefaultValuedAttr<Het_I64Attr, "0">:$channel);
  let assemblyFormat = "$value `to` $target attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Het_RecvOp : Het_Op<"recv", [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "receive a tensor from another stage";
  let description = [{
    ```mlir
    %act = het.recv from @s0 : tensor<8x1024xbf16>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$source,
                       DefaultValuedAttr<Het_I64Attr, "0">:$channel);
  let results = (outs AnyRankedTensor:$value);
  let assemblyFormat = "`from` $source attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Het_TransferOp : Het_Op<"transfer", [Pure, SameOperandsAndResultType]> {
  let summary = "move a tensor from one kind of device to another";
  let description = [{
    Where a tensor crosses vendors (for example an NVIDIA stage hands
    activations to an AMD stage on the same node) its bytes go through host
    memory or a common fabric. A transfer to the same kind is a no-op and
    folds away; two transfers in a row become one.

    ```mlir
    %y = het.transfer %x : tensor<8x64xf32> from #het.device<nvidia, "sm_80"> to #het.device<amd, "gfx90a">
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Het_DeviceKindAttr:$source,
                       Het_DeviceKindAttr:$target);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `:` type($input) `from` qualified($source) `to` qualified($target) attr-dict
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

#endif // HET_DIALECT_HET_IR_HETSTRUCTUREOPS_TD
