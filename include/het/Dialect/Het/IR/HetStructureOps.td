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
  let summary = "one pipeline stage placed on a device group";
  let description = [{
    The code that `replicas` data-parallel copies of one pipeline stage run,
    on devices of `device_group`, for the layers `[layer_begin, layer_end)`.
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
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, SymbolRefAttr:$device_group,
      Het_I64Attr:$replicas, Het_I64Attr:$layer_begin, Het_I64Attr:$layer_end);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::SymbolRefAttr":$deviceGroup,
                   "int64_t":$replicas, "int64_t":$layerBegin, "int64_t":$layerEnd,
                   "::mlir::TypeRange":$argumentTypes)>
  ];
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    YieldOp getYield();
  }];
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
