//===- HetTypes.td - type constraints used by het ops ------*- tablegen -*-===//

#ifndef HET_DIALECT_HET_IR_HETTYPES_TD
#define HET_DIALECT_HET_IR_HETTYPES_TD

include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"

/// Floating-point tensors: everything het computes on.
def Het_FloatTensor : RankedTensorOf<[F16, BF16, F32, F64]>;
/// Integer tensors of class labels and token ids.
def Het_IndexTensor : RankedTensorOf<[I32, I64]>;
/// 0-d tensor holding the optimizer step count.
def Het_StepTensor : 0DTensorOf<[I32, I64]>;

/// A 64-bit integer attribute read back as a *signed* value. Upstream
/// I64Attr returns uint64_t, which would turn a negative count or axis into a
/// huge positive one and let it slip past range checks.
def Het_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                               "64-bit signless integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

#endif // HET_DIALECT_HET_IR_HETTYPES_TD
