//===- Passes.h - passes on the het dialect ---------------------*- C++ -*-===//

#ifndef HET_DIALECT_HET_TRANSFORMS_PASSES_H
#define HET_DIALECT_HET_TRANSFORMS_PASSES_H

#include "het/Dialect/Het/IR/HetDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::het {

#define GEN_PASS_DECL
#include "het/Dialect/Het/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "het/Dialect/Het/Transforms/Passes.h.inc"

/// Registers `het-training-pipeline`: [het-fuse-attention,] het-autodiff,
/// canonicalize, het-fuse, canonicalize, cse; the autodiff options are
/// accepted as pipeline options.
void registerHetTrainingPipeline();

} // namespace mlir::het

#endif // HET_DIALECT_HET_TRANSFORMS_PASSES_H
