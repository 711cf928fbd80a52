//===- ModelFunction.h - the function a model pass rewrites -------*- C++ -*-===//
//
// Passes that rewrite a forward model (het-tensor-parallel,
// het-expert-parallel) take the function named by their `function`
// option, else the module's first defined function.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_TRANSFORMS_MODELFUNCTION_H
#define HET_DIALECT_HET_TRANSFORMS_MODELFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::het {

/// The function `name` of `module` (empty: its first defined one); null,
/// with an error naming `pass`, when there is none.
inline func::FuncOp modelFunction(ModuleOp module, StringRef name, StringRef pass) {
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal() && (name.empty() || f.getName() == name))
      return f;
  module.emitError() << pass << ": no function"
                     << (name.empty() ? std::string() : " named '" + name.str() + "'");
  return nullptr;
}

} // namespace mlir::het

#endif
