//===- HetAttrs.td - enums and attributes of het -----------*- tablegen -*-===//

#ifndef HET_DIALECT_HET_IR_HETATTRS_TD
#define HET_DIALECT_HET_IR_HETATTRS_TD

include "het/Dialect/Het/IR/HetDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Het_ReductionKind : I32EnumAttr<"ReductionKind",
    "reduction applied element-wise by a collective", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Prod", 1, "prod">,
      I32EnumAttrCase<"Min", 2, "min">,
      I32EnumAttrCase<"Max", 3, "max">,
      I32EnumAttrCase<"Avg", 4, "avg">
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::het";
}
def Het_ReductionKindAttr
    : EnumAttr<Het_Dialect, Het_ReductionKind, "reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

def Het_CollectiveAlgorithm : I32EnumAttr<"CollectiveAlgorithm",
    "algorithm a collective runs with", [
      I32EnumAttrCase<"Auto", 0, "auto">,
      I32EnumAttrCase<"Ring", 1, "ring">,
      I32EnumAttrCase<"Tree", 2, "tree">,
      I32EnumAttrCase<"HalvingDoubling", 3, "halving_doubling">,
      I32EnumAttrCase<"Hierarchical", 4, "hierarchical">,
      I32EnumAttrCase<"ParameterServer", 5, "ps">
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::het";
}
def Het_CollectiveAlgorithmAttr
    : EnumAttr<Het_Dialect, Het_CollectiveAlgorithm, "algorithm"> {
  let assemblyFormat = "`<` $value `>`";
}

def Het_CompressionKind : I32EnumAttr<"CompressionKind",
    "how a collective compresses the data it moves", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"FP16", 1, "fp16">,
      I32EnumAttrCase<"BF16", 2, "bf16">,
      I32EnumAttrCase<"Int8", 3, "int8">,
      I32EnumAttrCase<"TopK", 4, "topk">
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::het";
}
def Het_CompressionKindAttr
    : EnumAttr<Het_Dialect, Het_CompressionKind, "compression"> {
  let assemblyFormat = "`<` $value `>`";
}

def Het_DeviceVendor : I32EnumAttr<"DeviceVendor",
    "vendor (and so software stack) of a device", [
      I32EnumAttrCase<"CPU", 0, "cpu">,
      I32EnumAttrCase<"NVIDIA", 1, "nvidia">,
      I32EnumAttrCase<"AMD", 2, "amd">,
      I32EnumAttrCase<"Ascend", 3, "ascend">,
      I32EnumAttrCase<"Iluvatar", 4, "iluvatar">,
      I32EnumAttrCase<"MetaX", 5, "metax">,
      I32EnumAttrCase<"MooreThreads", 6, "moore_threads">
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::het";
}

def Het_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "formula used by gelu", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Tanh", 1, "tanh">
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::het";
}
def Het_GeluApproximationAttr
    : EnumAttr<Het_Dialect, Het_GeluApproximation, "gelu_approximation"> {
  let assemblyFormat = "`<` $value `>`";
}

def Het_Activation : I32EnumAttr<"Activation",
    "activation applied by a fused op after its main computation", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"ReLU", 1, "relu">,
      I32EnumAttrCase<"GELU", 2, "gelu">
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::het";
}
def Het_ActivationAttr : EnumAttr<Het_Dialect, Het_Activation, "activation"> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Het_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Het_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Het_DeviceKindAttr : Het_Attr<"DeviceKind", "device"> {
  let summary = "a kind of device: vendor plus architecture";
  let description = [{
    Names the kind of chip a device group is made of, which decides the code
    generator and the collective library used for it. The architecture is the
    vendor's own name for the instruction set (`sm_80`, `gfx90a`,
    `ascend910b`, `x86_64`).

    ```mlir
    #het.device<nvidia, "sm_80">
    #het.device<amd, "gfx90a">
    #het.device<cpu, "x86_64">
    ```
  }];
  let parameters = (ins EnumParameter<Het_DeviceVendor>:$vendor,
                        StringRefParameter<"architecture">:$arch);
  let assemblyFormat = "`<` $vendor `,` $arch `>`";
  let genVerifyDecl = 1;
}

def Het_ReplicaGroupAttr : Het_Attr<"ReplicaGroup", "replica_group"> {
  let summary = "replicas of a stage on one device group, with their share of a micro-batch";
  let description = [{
    `replicas` data-parallel copies of a stage placed on the device group
    `group`, each taking `samples` samples of every micro-batch (0: an even
    share of it). A stage lists one replica group per device group it runs
    on, so the replicas of one stage may be of different kinds, each with a
    share proportional to its speed.

    ```mlir
    #het.replica_group<@lab::@a100, 2, 48>
    ```
  }];
  let parameters = (ins "::mlir::SymbolRefAttr":$group, "int64_t":$replicas,
                        "int64_t":$samples);
  let assemblyFormat = "`<` $group `,` $replicas `,` $samples `>`";
  let genVerifyDecl = 1;
}

#endif // HET_DIALECT_HET_IR_HETATTRS_TD
