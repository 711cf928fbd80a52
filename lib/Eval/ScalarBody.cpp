//===- ScalarBody.cpp - runs the scalar body of het.elementwise ------------===//

#include "ScalarBody.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace het::eval {

template <typename T>
FailureOr<ScalarBody<T>> ScalarBody<T>::compile(Block &body) {
  ScalarBody<T> compiled;
  compiled.numArguments = static_cast<int>(body.getNumArguments());
  llvm::DenseMap<Value, int> slots;
  for (BlockArgument argument : body.getArguments())
    slots[argument] = static_cast<int>(argument.getArgNumber());
  for (Operation &op : body) {
    if (auto yield = dyn_cast<mlir::het::YieldOp>(op)) {
      compiled.resultSlot = slots.lookup(yield.getValues().front());
      continue;
    }
    Instruction instruction{};
    auto code = llvm::TypeSwitch<Operation *, std::optional<Code>>(&op)
                    .Case([&](arith::ConstantOp constant) -> std::optional<Code> {
                      auto value = dyn_cast<FloatAttr>(constant.getValue());
                      if (!value)
                        return std::nullopt;
                      instruction.constant = static_cast<T>(value.getValueAsDouble());
                      return Code::Constant;
                    })
                    .Case([](arith::AddFOp) { return Code::Add; })
                    .Case([](arith::SubFOp) { return Code::Sub; })
                    .Case([](arith::MulFOp) { return Code::Mul; })
                    .Case([](arith::DivFOp) { return Code::Div; })
                    .Case([](arith::MaximumFOp) { return Code::Max; })
                    .Case([](arith::MaxNumFOp) { return Code::Max; })
                    .Case([](arith::MinimumFOp) { return Code::Min; })
                    .Case([](arith::MinNumFOp) { return Code::Min; })
                    .Case([](arith::NegFOp) { return Code::Neg; })
                    .Case([](math::ExpOp) { return Code::Exp; })
                    .Case([](math::LogOp) { return Code::Log; })
                    .Case([](math::TanhOp) { return Code::Tanh; })
                    .Case([](math::ErfOp) { return Code::Erf; })
                    .Case([](math::SqrtOp) { return Code::Sqrt; })
                    .Case([](math::RsqrtOp) { return Code::Rsqrt; })
                    .Case([](math::AbsFOp) { return Code::Abs; })
                    .Case([](math::PowFOp) { return Code::Pow; })
                    .Case([&](arith::CmpFOp compare) -> std::optional<Code> {
                      instruction.predicate = static_cast<int>(compare.getPredicate());
                      return Code::Compare;
                    })
                    .Case([](arith::SelectOp) { return Code::Select; })
                    .Default([](Operation *) { return std::nullopt; });
    if (!code)
      return op.emitOpError("is not supported by the reference evaluator inside "
                            "het.elementwise");
    instruction.code = *code;
    for (auto [index, operand] : llvm::enumerate(op.getOperands()))
      instruction.operands[index] = slots.lookup(operand);
    slots[op.getResult(0)] = compiled.numArguments + static_cast<int>(compiled.program.size());
    compiled.program.push_back(instruction);
  }
  return compiled;
}

namespace {

/// x^e as compiled code computes it: the powers het-compile's lowering
/// turns into multiplications and square roots (upstream MLIR's algebraic
/// simplification, as PyTorch's CPU pow does for these exponents) the same
/// way here, so both give the same bits; other exponents through pow.
template <typename T> T power(T x, T e) {
  if (e == T(1))
    return x;
  if (e == T(-1))
    return T(1) / x;
  if (e == T(2))
    return x * x;
  if (e == T(3))
    return x * x * x;
  if (e == T(0.5))
    return std::sqrt(x);
  if (e == T(-0.5))
    return T(1) / std::sqrt(x);
  if (e == T(0.75))
    return std::sqrt(std::sqrt(x)) * std::sqrt(x);
  return std::pow(x, e);
}
bool compare(arith::CmpFPredicate predicate, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (predicate) {
  case arith::CmpFPredicate::AlwaysFalse: return false;
  case arith::CmpFPredicate::OEQ: return !unordered && a == b;
  case arith::CmpFPredicate::OGT: return !unordered && a > b;
  case arith::CmpFPredicate::OGE: return !unordered && a >= b;
  case arith::CmpFPredicate::OLT: return !unordered && a < b;
  case arith::CmpFPredicate::OLE: return !unordered && a <= b;
  case arith::CmpFPredicate::ONE: return !unordered && a != b;
  case arith::CmpFPredicate::ORD: return !unordered;
  case arith::CmpFPredicate::UEQ: return unordered || a == b;
  case arith::CmpFPredicate::UGT: return unordered || a > b;
  case arith::CmpFPredicate::UGE: return unordered || a >= b;
  case arith::CmpFPredicate::ULT: return unordered || a < b;
  case arith::CmpFPredicate::ULE: return unordered || a <= b;
  case arith::CmpFPredicate::UNE: return unordered || a != b;
  case arith::CmpFPredicate::UNO: return unordered;
  case arith::CmpFPredicate::AlwaysTrue: return true;
  }
  return false;
}
} // namespace

template <typename T> T ScalarBody<T>::run(const std::vector<T> &arguments) const {
  std::vector<T> slots(arguments);
  slots.resize(numArguments + program.size());
  for (size_t i = 0; i < program.size(); ++i) {
    const Instruction &in = program[i];
    T a = slots[in.operands[0]], b = slots[in.operands[1]], c = slots[in.operands[2]];
    T result = T(0);
    switch (in.code) {
    case Code::Constant: result = in.constant; break;
    case Code::Add: result = a + b; break;
    case Code::Sub: result = a - b; break;
    case Code::Mul: result = a * b; break;
    case Code::Div: result = a / b; break;
    case Code::Max: result = a > b ? a : b; break;
    case Code::Min: result = a < b ? a : b; break;
    case Code::Neg: result = -a; break;
    case Code::Exp: result = std::exp(a); break;
    case Code::Log: result = std::log(a); break;
    case Code::Tanh: result = std::tanh(a); break;
    case Code::Erf: result = std::erf(a); break;
    case Code::Sqrt: result = std::sqrt(a); break;
    case Code::Rsqrt: result = T(1) / std::sqrt(a); break;
    case Code::Abs: result = std::fabs(a); break;
    case Code::Pow: result = power(a, b); break;
    case Code::Compare:
      result = compare(static_cast<arith::CmpFPredicate>(in.predicate), a, b) ? T(1) : T(0);
      break;
    case Code::Select: result = a != T(0) ? b : c; break;
    }
    slots[numArguments + i] = result;
  }
  return slots[resultSlot];
}

template class ScalarBody<float>;
template class ScalarBody<double>;
template class ScalarBody<long double>;

} // namespace het::eval
