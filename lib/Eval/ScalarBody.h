//===- ScalarBody.h - runs the scalar body of het.elementwise ------*- C++ -*-===//
//
// The body is compiled once into a list of instructions over numbered slots,
// then run per element; looking ops up per element would be needlessly slow
// even for a reference.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_EVAL_SCALARBODY_H
#define HET_LIB_EVAL_SCALARBODY_H

#include "mlir/IR/Block.h"
#include "mlir/Support/LogicalResult.h"

#include <vector>

namespace het::eval {

template <typename T> class ScalarBody {
public:
  /// Fails with a diagnostic on the first op it cannot run.
  static mlir::FailureOr<ScalarBody> compile(mlir::Block &body);
  T run(const std::vector<T> &arguments) const;

private:
  enum class Code {
    Constant, Add, Sub, Mul, Div, Max, Min, Neg, Exp, Log, Tanh, Erf, Sqrt,
    Rsqrt, Abs, Pow, Compare, Select
  };
  struct Instruction {
    Code code;
    int operands[3] = {0, 0, 0};
    T constant = T(0);
    int predicate = 0; // arith::CmpFPredicate for Compare
  };
  int numArguments = 0;
  int resultSlot = 0;
  std::vector<Instruction> program; // instruction i writes slot numArguments + i
};

} // namespace het::eval

#endif // HET_LIB_EVAL_SCALARBODY_H
