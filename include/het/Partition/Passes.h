//===- Passes.h - het-partition ---------------------------------*- C++ -*-===//
#ifndef HET_PARTITION_PASSES_H
#define HET_PARTITION_PASSES_H

#include "het/Dialect/Het/IR/HetDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::het {

#define GEN_PASS_DECL
#include "het/Partition/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "het/Partition/Passes.h.inc"

} // namespace mlir::het

#endif // HET_PARTITION_PASSES_H
