//===- ModelFromIR.h - per-layer costs of a het program ---------*- C++ -*-===//
#ifndef HET_PLAN_MODELFROMIR_H
#define HET_PLAN_MODELFROMIR_H

#include "het/Plan/ModelDesc.h"

#include <string>

namespace mlir {
class ModuleOp;
class Type;
class Operation;
class DialectRegistry;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace het::plan {

/// Walks the first function whose ops carry het.layer and sums, per layer:
/// FLOPs (2 per multiply-add of linear, matmul and conv2d; a few per element
/// for normalizations and softmax; one per element otherwise, backward twice
/// forward), activation bytes read and written, parameters (each het.param
/// argument counted once, at the first layer that uses it), the bytes that
/// cross each layer boundary (every value used by a later layer), and the
/// bytes each layer stashes for the backward (its results). Per-sample
/// figures divide by the leading dimension of the first non-parameter
/// argument (the batch). Throws PlanError naming `file` when there is no
/// such function.
ModelDesc modelFromModule(mlir::ModuleOp module, const std::string &file,
                          const std::string &function = "");

/// Bytes of a statically shaped tensor (0 otherwise).
double tensorBytes(mlir::Type type);
/// The forward FLOPs of one op (0 for data movement).
double forwardFlops(mlir::Operation *op);

/// The function a planner works on: `name` if given; else a training step
/// (`@<model>_train_step`, what het-autodiff adds) whose ops carry
/// het.layer; else the first function whose ops do. Null if none.
mlir::func::FuncOp findLayeredFunction(mlir::ModuleOp module,
                                       const std::string &name = "");

/// Fills each layer's tensor-parallel status (LayerDesc) for degrees 2, 4
/// and 8 from het-tensor-parallel's analysis of the module's forward model.
void describeTensorParallelism(mlir::ModuleOp module, mlir::func::FuncOp analyzed,
                               ModelDesc &model);

/// Parses `path` with the dialects het programs use and analyzes it.
ModelDesc loadModelMlir(const std::string &path);
/// A model from het IR (a path ending in .mlir) or a model JSON.
ModelDesc loadModelFile(const std::string &path);

/// Dialects a het model file may contain.
void registerModelDialects(mlir::DialectRegistry &registry);

} // namespace het::plan

#endif
