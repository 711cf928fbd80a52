//===- HetElementwiseGradient.cpp - reverse mode through a scalar body ----===//
//
// het.elementwise carries any chain of scalar arith/math ops, so its gradient
// rule differentiates the body itself: for each input, a new het.elementwise
// over (the forward inputs, the result gradient) whose body recomputes what
// it needs of the forward body and runs reverse mode over it, yielding that
// input's adjoint. The importer expresses PyTorch's point-wise ops (exp,
// log, sigmoid, silu, tanh, erf, pow, rsqrt, division, where, clamp, ...)
// this way, so each gets its gradient without a rule of its own. The
// derivatives follow PyTorch's backward formulas (derivatives.yaml), e.g.
// sqrt's grad / (2 result), rsqrt's -grad result^3 / 2, and the subgradient
// choices of max/min (the first operand on ties) and abs (0 at 0).
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::het;

namespace {

/// Builds scalar arithmetic in one element type.
struct Scalar {
  OpBuilder &b;
  Location loc;
  Type type;

  Value constant(double value) {
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(type, value));
  }
  Value add(Value x, Value y) { return b.create<arith::AddFOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<arith::MulFOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<arith::DivFOp>(loc, x, y); }
  Value neg(Value x) { return b.create<arith::NegFOp>(loc, x); }
  Value select(Value c, Value x, Value y) { return b.create<arith::SelectOp>(loc, c, x, y); }
  Value compare(arith::CmpFPredicate p, Value x, Value y) {
    return b.create<arith::CmpFOp>(loc, p, x, y);
  }
};

/// Reverse mode over the cloned body `ops` (in order), seeded with `seed`
/// as the adjoint of `output`; returns the adjoint of `wrt` (zero when the
/// output does not depend on it). Fails on an op without a rule.
FailureOr<Value> adjoint(Scalar &s, ArrayRef<Operation *> ops, Value output, Value seed,
                         Value wrt) {
  DenseMap<Value, Value> adjoints;
  adjoints[output] = seed;
  auto accumulate = [&](Value target, Value contribution) {
    if (!isa<FloatType>(target.getType()))
      return;
    Value &slot = adjoints[target];
    slot = slot ? s.add(slot, contribution) : contribution;
  };
  for (Operation *op : llvm::reverse(ops)) {
    if (op->getNumResults() != 1)
      continue;
    Value r = op->getResult(0), g = adjoints.lookup(r);
    if (!g || !isa<FloatType>(r.getType()))
      continue;
    Value zero = s.constant(0.0);
    LogicalResult rule =
        TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](arith::ConstantOp) { return success(); })
            .Case([&](arith::AddFOp o) {
              accumulate(o.getLhs(), g);
              accumulate(o.getRhs(), g);
              return success();
            })
            .Case([&](arith::SubFOp o) {
              accumulate(o.getLhs(), g);
              accumulate(o.getRhs(), s.neg(g));
              return success();
            })
            .Case([&](arith::MulFOp o) {
              accumulate(o.getLhs(), s.mul(g, o.getRhs()));
              accumulate(o.getRhs(), s.mul(g, o.getLhs()));
              return success();
            })
            .Case([&](arith::DivFOp o) {
              accumulate(o.getLhs(), s.div(g, o.getRhs()));
              accumulate(o.getRhs(), s.neg(s.div(s.mul(g, r), o.getRhs())));
              return success();
            })
            .Case([&](arith::NegFOp o) {
              accumulate(o.getOperand(), s.neg(g));
              return success();
            })
            .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp, arith::MinNumFOp>(
                [&](Operation *o) {
                  bool max = isa<arith::MaximumFOp, arith::MaxNumFOp>(o);
                  Value first = s.compare(max ? arith::CmpFPredicate::OGE
                                              : arith::CmpFPredicate::OLE,
                                          o->getOperand(0), o->getOperand(1));
                  accumulate(o->getOperand(0), s.select(first, g, zero));
                  accumulate(o->getOperand(1), s.select(first, zero, g));
                  return success();
                })
            .Case([&](math::ExpOp o) {
              accumulate(o.getOperand(), s.mul(g, r));
              return success();
            })
            .Case([&](math::LogOp o) {
              accumulate(o.getOperand(), s.div(g, o.getOperand()));
              return success();
            })
            .Case([&](math::TanhOp o) {
              accumulate(o.getOperand(), s.mul(g, s.add(s.constant(1.0), s.neg(s.mul(r, r)))));
              return success();
            })
            .Case([&](math::ErfOp o) {
              Value x = o.getOperand();
              Value bump = s.b.create<math::ExpOp>(s.loc, s.neg(s.mul(x, x)));
              accumulate(x, s.mul(s.mul(g, s.constant(2.0 / std::sqrt(M_PI))), bump));
              return success();
            })
            .Case([&](math::SqrtOp o) {
              accumulate(o.getOperand(), s.div(g, s.mul(s.constant(2.0), r)));
              return success();
            })
            .Case([&](math::RsqrtOp o) {
              accumulate(o.getOperand(),
                         s.mul(s.mul(g, s.constant(-0.5)), s.mul(s.mul(r, r), r)));
              return success();
            })
            .Case([&](math::AbsFOp o) {
              Value x = o.getOperand();
              Value sign = s.select(s.compare(arith::CmpFPredicate::OGT, x, zero), g,
                                    s.select(s.compare(arith::CmpFPredicate::OLT, x, zero),
                                             s.neg(g), zero));
              accumulate(x, sign);
              return success();
            })
            .Case([&](math::PowFOp o) {
              Value x = o.getLhs(), e = o.getRhs();
              Value lower = s.b.create<math::PowFOp>(s.loc, x, s.add(e, s.constant(-1.0)));
              // PyTorch: a zero exponent gives a zero gradient (not 0 * inf).
              Value dx = s.select(s.compare(arith::CmpFPredicate::OEQ, e, zero), zero,
                                  s.mul(s.mul(g, e), lower));
              accumulate(x, dx);
              if (!e.getDefiningOp<arith::ConstantOp>())
                accumulate(e, s.mul(s.mul(g, r), s.b.create<math::LogOp>(s.loc, x)));
              return success();
            })
            .Case([&](arith::SelectOp o) {
              accumulate(o.getTrueValue(), s.select(o.getCondition(), g, zero));
              accumulate(o.getFalseValue(), s.select(o.getCondition(), zero, g));
              return success();
            })
            .Default([&](Operation *o) {
              return o->emitOpError("has no derivative rule inside het.elementwise");
            });
    if (failed(rule))
      return failure();
  }
  Value result = adjoints.lookup(wrt);
  return result ? result : s.constant(0.0);
}

} // namespace

LogicalResult ElementwiseOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                            SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value dy = dys[0];
  SmallVector<Value> operands(getInputs());
  operands.push_back(dy);
  Block &forward = getBody().front();
  for (unsigned i = 0; i < getInputs().size(); ++i) {
    Value input = getInputs()[i];
    LogicalResult built = success();
    auto gradient = b.create<ElementwiseOp>(
        loc, dy.getType(), operands, [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          // Recompute the forward body on this element, then reverse mode.
          IRMapping map;
          for (unsigned k = 0; k < forward.getNumArguments(); ++k)
            map.map(forward.getArgument(k), args[k]);
          SmallVector<Operation *> cloned;
          for (Operation &op : forward.without_terminator())
            cloned.push_back(nb.clone(op, map));
          Value output = map.lookup(forward.getTerminator()->getOperand(0));
          Scalar s{nb, l, args.back().getType()};
          FailureOr<Value> dx = adjoint(s, cloned, output, args.back(), args[i]);
          if (failed(dx)) {
            built = failure();
            return s.constant(0.0);
          }
          return *dx;
        });
    if (failed(built)) {
      gradient.erase();
      return emitOpError("cannot differentiate its body (see the op named above)");
    }
    // Drop the recomputation the adjoint does not need.
    Block &body = gradient.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty())
        op->erase();
    Value dx = gradient.getResult();
    if (dx.getType() != input.getType())
      dx = b.create<SumToShapeOp>(loc, input.getType(), dx);
    dxs.push_back(dx);
  }
  return success();
}
