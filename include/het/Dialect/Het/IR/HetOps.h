//===- HetOps.h - operations of the het dialect -----------------*- C++ -*-===//

#ifndef HET_DIALECT_HET_IR_HETOPS_H
#define HET_DIALECT_HET_IR_HETOPS_H

#include "het/Dialect/Het/IR/HetDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::het {

/// Number of members of the collective group `group` names, as seen from
/// `op`: the replica count of a `het.stage` or the device count of a
/// `het.device_group`. Fails (without a diagnostic) if it names neither.
FailureOr<int64_t> resolveGroupSize(Operation *op, SymbolRefAttr group,
                                    SymbolTableCollection &symbolTable);

/// NumPy broadcasting of two tensor types with the same element type.
LogicalResult inferBroadcastType(std::optional<Location> loc, Type lhs,
                                 Type rhs, SmallVectorImpl<Type> &types);

/// Shape rule shared by het.batch_norm and het.batch_norm_relu.
LogicalResult inferBatchNormTypes(std::optional<Location> loc, Value input,
                                  Value scale, Value bias, double epsilon,
                                  SmallVectorImpl<Type> &types);

/// Shape rule shared by het.max_pool2d and het.avg_pool2d.
LogicalResult inferPool2dType(std::optional<Location> loc, Value input,
                              ArrayRef<int64_t> kernel,
                              ArrayRef<int64_t> strides,
                              ArrayRef<int64_t> padding,
                              SmallVectorImpl<Type> &types);

} // namespace mlir::het

#include "het/Dialect/Het/IR/HetInterfaces.h.inc"

#define GET_OP_CLASSES
#include "het/Dialect/Het/IR/HetOps.h.inc"

#endif // HET_DIALECT_HET_IR_HETOPS_H
