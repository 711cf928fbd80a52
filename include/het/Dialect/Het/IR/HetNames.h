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

#include <string>

namespace mlir::het {

/// Argument `index`'s `het.name`, else "arg<index>".
std::string argumentName(FunctionOpInterface function, unsigned index);
/// Result `index`'s `het.name`, else "result<index>".
std::string resultName(FunctionOpInterface function, unsigned index);

} // namespace mlir::het

#endif // HET_DIALECT_HET_IR_HETNAMES_H
