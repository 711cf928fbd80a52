//===- BuildRecord.h - how a pipeline executable was compiled ---*- C++ -*-===//
//
// het-compile --cluster writes <output>.build.json beside the executable:
// the compiler, directory, model, cluster, plan, global batch and every
// other option it was given. het-run --elastic reads it to compile the same
// model again for the devices left after a loss (docs/het-run.md).
//
//===----------------------------------------------------------------------===//

#ifndef HET_TOOLS_HET_COMPILE_BUILDRECORD_H
#define HET_TOOLS_HET_COMPILE_BUILDRECORD_H

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace het::compile {

/// Writes <output>.build.json. `argv` is het-compile's whole command line;
/// the model, -o, --cluster, --plan, --global-batch and --write-plan are
/// recorded as fields, the rest verbatim under "options".
llvm::Error writeBuildRecord(const std::string &output, const std::vector<std::string> &argv,
                             const std::string &compiler, const std::string &model,
                             const std::string &cluster, const std::string &plan);

} // namespace het::compile

#endif
