//===- IntegerInputs.h - what an integer argument holds ----------*- C++ -*-===//
//
// Class labels or token ids, and their range, from the ops that read an
// integer argument (also through reshapes: a language model flattens its
// labels before the loss). The evaluator's random inputs and the compiled
// executables' synthetic ones draw from the same range, so het-eval and an
// executable given the same seed see the same batch.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_IR_INTEGERINPUTS_H
#define HET_DIALECT_HET_IR_INTEGERINPUTS_H

#include "mlir/IR/Value.h"

#include <cstdint>

namespace mlir::het {

struct IntegerInput {
  enum class Kind { Label, TokenId, Unknown };
  Kind kind = Kind::Unknown;
  /// Exclusive upper bound of the values: the classes of the loss, the rows
  /// of the table; 2 when nothing says.
  int64_t bound = 2;
};

IntegerInput integerInput(Value argument);

} // namespace mlir::het

#endif // HET_DIALECT_HET_IR_INTEGERINPUTS_H
