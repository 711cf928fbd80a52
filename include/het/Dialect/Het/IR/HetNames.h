//===- HetNames.h - the names of function arguments and results ---*- C++ -*-===//
//
// Runners (het-eval, compiled executables) key .npz arrays by these names
// and feed a training step's results back into the arguments of the same
// name; het-autodiff names the step's results this way. One definition so
// that all of them agree.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_IR_HETNAMES_H
#define HET_DIALECT_HET_IR_HETNAMES_H

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::het {

/// Argument `index`'s `het.name`, else "arg<index>".
std::string argumentName(FunctionOpInterface function, unsigned index);
/// Result `index`'s `het.name`, else "result<index>".
std::string resultName(FunctionOpInterface function, unsigned index);

/// Discardable array of strings het-shard-optimizer puts on a `het.stage`:
/// the names (as in het.arg_names) of the optimizer state each of its
/// replicas holds a block of.
constexpr llvm::StringLiteral kShardedStateAttrName = "het.sharded_state";
/// On a het.stage whose replicas train in different number formats: each
/// replica group's format (fp32, bf16, fp16), in the groups' order.
constexpr llvm::StringLiteral kReplicaFormatsAttrName = "het.replica_formats";
/// On the het.cast that widens a 16-bit value leaving such a stage to f32
/// (het-autocast f32-boundaries): kept, not folded into the receiver's
/// cast, so that the stage sends f32 whichever format computed it.
constexpr llvm::StringLiteral kF32BoundaryAttrName = "het.f32_boundary";
/// On a forward model's func.func: the format it was exported in (bf16,
/// fp16 or fp32; het.export from a PyTorch model in bf16, under autocast,
/// or with --precision). het-compile compiles in it unless told otherwise;
/// the model itself is f32 (het-autocast applies the format).
constexpr llvm::StringLiteral kModelPrecisionAttrName = "het.precision";
/// On a het.stage of a module built for one format of such stages: the
/// format its code computes in; the runtime lowering takes only the replica
/// groups of that format ("-": none, built by another module).
constexpr llvm::StringLiteral kBuiltFormatAttrName = "het.built_format";
/// On a parameter of a forward model split by het-expert-parallel: the
/// stage whose replicas hold its experts (axis 0) in blocks.
constexpr llvm::StringLiteral kExpertParallelAttrName = "het.expert_parallel";
/// On a het.stage of a module built for one replica of its expert-parallel
/// stages (expert parallelism: each replica holds other experts, so each
/// has its own code): that replica, whose group (of one) the runtime
/// lowering takes (-1: none, built by another module).
constexpr llvm::StringLiteral kBuiltMemberAttrName = "het.built_member";
/// On a het.stage with expert parallelism: each replica group's experts
/// (one replica per group), in the groups' order.
constexpr llvm::StringLiteral kReplicaExpertsAttrName = "het.replica_experts";

/// Whether runners start block argument `argument` at one rather than at
/// random or zero: a normalization's scale (a parameter) and a running
/// variance (state), as PyTorch initializes them.
bool startsAtOne(Value argument);

/// Why `function` is not a forward model, or "" if it is one: a body of one
/// block whose result 0 is the 0-d float loss and whose further results
/// are state it updates (BatchNorm's running statistics), each named like
/// the `het.state` argument it is the next value of, with its type.
/// Training steps feed such results back by that name.
std::string whyNotForwardModel(FunctionOpInterface function);
inline bool isForwardModel(FunctionOpInterface function) {
  return whyNotForwardModel(function).empty();
}

} // namespace mlir::het

#endif // HET_DIALECT_HET_IR_HETNAMES_H
