//===- HetToLinalg.cpp - het element-wise, layout and optimizer ops to linalg --===//
//
// Element-wise ops (with NumPy broadcasting), het.elementwise bodies,
// reductions, reshapes, transposes, softmax, layer and RMS norm, cross-entropy and
// the optimizer updates become linalg.generic / linalg.transpose / tensor
// reshapes, so later upstream passes fuse, bufferize and vectorize them.
// Concatenation and slicing are in LayoutToLinalg.cpp, the contractions of
// library=mlir in ContractionsToLinalg.cpp. The scalar formulas follow the
// reference kernels in lib/Eval (they define the semantics).
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"
#include "Lowering.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::het;
using namespace mlir::het::lowering;

bool mlir::het::isLoweredToLinalg(Operation *op) {
  return isa<ReluOp, ReluGradOp, GeluOp, GeluGradOp, AddOp, SubOp, MulOp, ElementwiseOp,
             BroadcastToOp, SumToShapeOp, ReduceSumOp, ReduceMeanOp, ReshapeOp, TransposeOp,
             SoftmaxOp, SoftmaxGradOp, LayerNormOp, LayerNormGradOp, RMSNormOp,
             RMSNormGradOp, CrossEntropyOp, CrossEntropyGradOp, SGDOp, AdamOp, TransferOp,
             BatchNormRunningStatsOp, CastOp, UnscaleGradientsOp, SelectOp, LossScaleUpdateOp,
             SquaredNormOp, ClipByNormOp>(op) ||
         isLayoutLoweredToLinalg(op);
}

FailureOr<SmallVector<Value>> mlir::het::lowerToLinalg(OpBuilder &b, Operation *op) {
  if (isLayoutLoweredToLinalg(op))
    return lowerLayoutToLinalg(b, op);
  Location loc = op->getLoc();
  auto resultType = [&](unsigned i = 0) {
    return cast<RankedTensorType>(op->getResult(i).getType());
  };
  auto single = [&](ValueRange inputs, auto scalar) -> FailureOr<SmallVector<Value>> {
    return buildElementwise(b, loc, TypeRange{resultType()}, inputs,
                            [&](OpBuilder &nb, Location l, ValueRange args) {
                              return SmallVector<Value>{scalar(nb, l, args)};
                            });
  };
  auto cst = [](OpBuilder &nb, Location l, Value like, double v) {
    return constantLike(nb, l, like.getType(), v);
  };
  // A gradient times a 0-d f32 factor (loss scaling's 1 / scale, gradient
  // clipping's coefficient), rounded to the gradient's format first.
  auto scaledBy = [&](Value gradient, Value factor) -> Value {
    Type element = cast<RankedTensorType>(gradient.getType()).getElementType();
    return buildElementwise(b, loc, TypeRange{gradient.getType()}, ValueRange{gradient, factor},
                            [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
                              Value f = a[1];
                              if (element != f.getType())
                                f = nb.create<arith::TruncFOp>(l, element, f);
                              return {nb.create<arith::MulFOp>(l, a[0], f)};
                            })[0];
  };
  return llvm::TypeSwitch<Operation *, FailureOr<SmallVector<Value>>>(op)
      // arith.extf or arith.truncf (to nearest, ties to even) per element;
      // bf16 conversions are expanded into integer code before LLVM
      // (Pipeline.cpp), the others are LLVM's fpext/fptrunc.
      .Case([&](CastOp o) {
        Type to = resultType().getElementType();
        unsigned from = cast<FloatType>(o.getInput().getType().getElementType()).getWidth();
        return single({o.getInput()}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          unsigned width = cast<FloatType>(to).getWidth();
          if (width > from)
            return nb.create<arith::ExtFOp>(l, to, a[0]);
          if (width == from) {
            // bf16 <-> f16 (layers of different formats): exactly to f32,
            // then rounded once to the target, as the evaluator does.
            Value wide = nb.create<arith::ExtFOp>(l, nb.getF32Type(), a[0]);
            return nb.create<arith::TruncFOp>(l, to, wide);
          }
          return nb.create<arith::TruncFOp>(l, to, a[0]);
        });
      })
      .Case([&](ReluOp o) {
        return single({o.getInput()}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return reluScalar(nb, l, a[0]);
        });
      })
      .Case([&](ReluGradOp o) {
        return single({o.getGradOutput(), o.getInput()},
                      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                        return nb.create<arith::SelectOp>(l, positive(nb, l, a[1]), a[0],
                                                          cst(nb, l, a[0], 0.0));
                      });
      })
      .Case([&](GeluOp o) {
        bool tanhForm = o.getApproximate() == GeluApproximation::Tanh;
        return single({o.getInput()}, [&](OpBuilder &nb, Location l, ValueRange a) {
          return geluScalar(nb, l, a[0], tanhForm);
        });
      })
      .Case([&](GeluGradOp o) {
        bool tanhForm = o.getApproximate() == GeluApproximation::Tanh;
        return single({o.getGradOutput(), o.getInput()},
                      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                        Value v = a[1], half = cst(nb, l, v, 0.5), one = cst(nb, l, v, 1.0);
                        Value vv = nb.create<arith::MulFOp>(l, v, v);
                        Value derivative;
                        if (tanhForm) {
                          double k = std::sqrt(2.0 / M_PI), c = 0.044715;
                          Value v3 = nb.create<arith::MulFOp>(l, vv, v);
                          Value inner = nb.create<arith::MulFOp>(
                              l, cst(nb, l, v, k),
                              nb.create<arith::AddFOp>(
                                  l, v, nb.create<arith::MulFOp>(l, cst(nb, l, v, c), v3)));
                          Value t = nb.create<math::TanhOp>(l, inner);
                          Value dInner = nb.create<arith::MulFOp>(
                              l, cst(nb, l, v, k),
                              nb.create<arith::AddFOp>(
                                  l, one, nb.create<arith::MulFOp>(l, cst(nb, l, v, 3 * c), vv)));
                          Value left = nb.create<arith::MulFOp>(
                              l, half, nb.create<arith::AddFOp>(l, one, t));
                          Value oneMinusT2 = nb.create<arith::SubFOp>(
                              l, one, nb.create<arith::MulFOp>(l, t, t));
                          Value right = nb.create<arith::MulFOp>(
                              l, nb.create<arith::MulFOp>(l, nb.create<arith::MulFOp>(l, half, v),
                                                          oneMinusT2),
                              dInner);
                          derivative = nb.create<arith::AddFOp>(l, left, right);
                        } else {
                          Value erf = nb.create<math::ErfOp>(
                              l, nb.create<arith::MulFOp>(l, v, cst(nb, l, v, M_SQRT1_2)));
                          Value cdf = nb.create<arith::MulFOp>(
                              l, half, nb.create<arith::AddFOp>(l, one, erf));
                          Value e = nb.create<math::ExpOp>(
                              l, nb.create<arith::MulFOp>(l, cst(nb, l, v, -0.5), vv));
                          Value pdf = nb.create<arith::MulFOp>(
                              l, cst(nb, l, v, 0.3989422804014327), e);
                          derivative = nb.create<arith::AddFOp>(
                              l, cdf, nb.create<arith::MulFOp>(l, v, pdf));
                        }
                        return nb.create<arith::MulFOp>(l, a[0], derivative);
                      });
      })
      .Case([&](AddOp o) {
        return single({o.getLhs(), o.getRhs()}, [&](OpBuilder &nb, Location l, ValueRange a) {
          return nb.create<arith::AddFOp>(l, a[0], a[1]).getResult();
        });
      })
      .Case([&](SubOp o) {
        return single({o.getLhs(), o.getRhs()}, [&](OpBuilder &nb, Location l, ValueRange a) {
          return nb.create<arith::SubFOp>(l, a[0], a[1]).getResult();
        });
      })
      .Case([&](MulOp o) {
        return single({o.getLhs(), o.getRhs()}, [&](OpBuilder &nb, Location l, ValueRange a) {
          return nb.create<arith::MulFOp>(l, a[0], a[1]).getResult();
        });
      })
      .Case([&](ElementwiseOp o) -> FailureOr<SmallVector<Value>> {
        // The body is scalar arith/math ending in het.yield: clone it into
        // the linalg.generic, which takes the same scalars.
        Block &body = o.getBody().front();
        return single(o.getInputs(), [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          IRMapping mapping;
          mapping.map(body.getArguments(), a);
          for (Operation &inner : body.without_terminator())
            nb.clone(inner, mapping);
          return mapping.lookup(body.getTerminator()->getOperand(0));
        });
      })
      .Case([&](BroadcastToOp o) {
        return single({o.getInput()}, [](OpBuilder &, Location, ValueRange a) { return a[0]; });
      })
      .Case([&](SumToShapeOp o) -> FailureOr<SmallVector<Value>> {
        return SmallVector<Value>{buildSum(b, loc, o.getInput(), resultType(), {})};
      })
      .Case<ReduceSumOp, ReduceMeanOp>([&](auto o) -> FailureOr<SmallVector<Value>> {
        auto inputType = cast<RankedTensorType>(o.getInput().getType());
        SmallVector<int64_t> axes;
        int64_t count = 1;
        for (int64_t axis : o.getAxes()) {
          axis = axis < 0 ? axis + inputType.getRank() : axis;
          axes.push_back(axis);
          count *= inputType.getDimSize(axis);
        }
        Value sum = o.getKeepDims() ? buildSum(b, loc, o.getInput(), resultType(), {})
                                    : buildSum(b, loc, o.getInput(), resultType(), axes);
        if (isa<ReduceSumOp>(op))
          return SmallVector<Value>{sum};
        return buildElementwise(b, loc, TypeRange{resultType()}, ValueRange{sum},
                                [&](OpBuilder &nb, Location l, ValueRange a) {
                                  Value n = cst(nb, l, a[0], static_cast<double>(count));
                                  return SmallVector<Value>{nb.create<arith::DivFOp>(l, a[0], n)};
                                });
      })
      .Case([&](ReshapeOp o) -> FailureOr<SmallVector<Value>> {
        if (!resultType().hasStaticShape() ||
            !cast<RankedTensorType>(o.getInput().getType()).hasStaticShape())
          return o.emitOpError("needs static shapes for CPU code generation");
        return SmallVector<Value>{buildReshape(b, loc, o.getInput(), resultType())};
      })
      .Case([&](TransposeOp o) -> FailureOr<SmallVector<Value>> {
        RankedTensorType type = resultType();
        Value init = b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType());
        auto transpose = b.create<linalg::TransposeOp>(loc, o.getInput(), init, o.getPermutation());
        return SmallVector<Value>{transpose.getResult()[0]};
      })
      .Case([&](SoftmaxOp o) -> FailureOr<SmallVector<Value>> {
        // As lib/Eval's softmax: scale, then with `causal` key k of query q
        // (the second-last dimension) is visible when k <= q + (K - Q);
        // masked entries are 0.
        RankedTensorType type = resultType();
        int64_t n = type.getRank();
        int64_t axis = o.getAxis() < 0 ? o.getAxis() + n : o.getAxis();
        double scale = o.getScale().convertToDouble();
        bool causal = o.getCausal();
        int64_t keys = type.getDimSize(axis);
        int64_t queries = causal ? type.getDimSize(n - 2) : 1;
        auto visible = [&](OpBuilder &nb, Location l) -> Value {
          if (!causal)
            return nb.create<arith::ConstantIntOp>(l, 1, 1);
          Value k = nb.create<linalg::IndexOp>(l, axis);
          Value q = nb.create<linalg::IndexOp>(l, n - 2);
          Value shift = nb.create<arith::ConstantIndexOp>(l, keys - queries);
          Value limit = nb.create<arith::AddIOp>(l, q, shift);
          return nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::sle, k, limit);
        };
        auto scaled = [&](OpBuilder &nb, Location l, Value x) -> Value {
          return nb.create<arith::MulFOp>(l, cst(nb, l, x, scale), x);
        };
        Value peak = buildAxisReduction(
            b, loc, {o.getInput()}, axis, -INFINITY,
            [&](OpBuilder &nb, Location l, Value acc, ValueRange a) -> Value {
              Value v = nb.create<arith::SelectOp>(l, visible(nb, l), scaled(nb, l, a[0]),
                                                   cst(nb, l, acc, -INFINITY));
              return nb.create<arith::MaximumFOp>(l, acc, v);
            });
        auto shiftedExp = [&](OpBuilder &nb, Location l, Value x, Value p) -> Value {
          return nb.create<math::ExpOp>(l, nb.create<arith::SubFOp>(l, scaled(nb, l, x), p));
        };
        // The sum needs the peak per line: read it through the output map.
        int64_t rank = n;
        SmallVector<AffineExpr> outExprs;
        for (int64_t d = 0; d < rank; ++d)
          if (d != axis)
            outExprs.push_back(getAffineDimExpr(d, b.getContext()));
        auto lineType = cast<RankedTensorType>(peak.getType());
        Value empty = b.create<tensor::EmptyOp>(loc, lineType.getShape(), lineType.getElementType());
        Value zero = constantLike(b, loc, lineType.getElementType(), 0.0);
        Value filled = b.create<linalg::FillOp>(loc, zero, empty).getResult(0);
        SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
        iterators[axis] = utils::IteratorType::reduction;
        SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank),
                                    droppedAxisMap(b.getContext(), rank, axis),
                                    droppedAxisMap(b.getContext(), rank, axis)};
        Value sum = b.create<linalg::GenericOp>(
                         loc, TypeRange{lineType}, ValueRange{o.getInput(), peak},
                         ValueRange{filled}, maps, iterators,
                         [&](OpBuilder &nb, Location l, ValueRange args) {
                           Value e = nb.create<arith::SelectOp>(
                               l, visible(nb, l), shiftedExp(nb, l, args[0], args[1]),
                               cst(nb, l, args[0], 0.0));
                           nb.create<linalg::YieldOp>(
                               l, ValueRange{nb.create<arith::AddFOp>(l, args[2], e)});
                         })
                        .getResult(0);
        Value y = buildWithReduced(b, loc, type, {o.getInput()}, {peak, sum}, axis,
                                   [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                                     Value value = nb.create<arith::DivFOp>(
                                         l, shiftedExp(nb, l, a[0], a[1]), a[2]);
                                     return nb.create<arith::SelectOp>(
                                         l, visible(nb, l), value, cst(nb, l, a[0], 0.0));
                                   });
        return SmallVector<Value>{y};
      })
      .Case([&](SoftmaxGradOp o) -> FailureOr<SmallVector<Value>> {
        // dx = scale * y * (dy - sum_k dy y).
        RankedTensorType type = resultType();
        int64_t n = type.getRank();
        int64_t axis = o.getAxis() < 0 ? o.getAxis() + n : o.getAxis();
        double scale = o.getScale().convertToDouble();
        Value dot = buildAxisReduction(
            b, loc, {o.getGradOutput(), o.getOutput()}, axis, 0.0,
            [&](OpBuilder &nb, Location l, Value acc, ValueRange a) -> Value {
              return nb.create<arith::AddFOp>(l, acc, nb.create<arith::MulFOp>(l, a[0], a[1]));
            });
        Value dx = buildWithReduced(
            b, loc, type, {o.getGradOutput(), o.getOutput()}, {dot}, axis,
            [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
              Value diff = nb.create<arith::SubFOp>(l, a[0], a[2]);
              Value sy = nb.create<arith::MulFOp>(l, cst(nb, l, a[1], scale), a[1]);
              return nb.create<arith::MulFOp>(l, sy, diff);
            });
        return SmallVector<Value>{dx};
      })
      .Case([&](LayerNormOp o) -> FailureOr<SmallVector<Value>> {
        // As lib/Eval's layerNorm, over the last dimension: mean, biased
        // variance, rstd = 1/sqrt(var + eps), y = (x - mean) rstd gamma + beta.
        RankedTensorType type = resultType();
        Type f = type.getElementType();
        LastAxisLayout layout = lastAxisLayout(b, type, o.getScale());
        int64_t D = layout.size;
        AffineMap full = layout.full, row = layout.row, channel = layout.channel;
        SmallVector<utils::IteratorType> reduce = layout.reduce, parallel = layout.parallel;
        auto rowType = cast<RankedTensorType>(op->getResult(1).getType());
        double epsilon = o.getEpsilon().convertToDouble();
        Value x = o.getInput();
        Value sum = buildGeneric(b, loc, {x}, {full}, {filledTensor(b, loc, rowType.getShape(), f, 0.0)},
                                 {row}, reduce, [&](OpBuilder &nb, Location l, ValueRange a) {
                                   return SmallVector<Value>{nb.create<arith::AddFOp>(l, a[1], a[0])};
                                 })[0];
        Value mean = buildElementwise(b, loc, TypeRange{rowType}, {sum},
                                      [&](OpBuilder &nb, Location l, ValueRange a) {
                                        return SmallVector<Value>{nb.create<arith::DivFOp>(
                                            l, a[0], cst(nb, l, a[0], static_cast<double>(D)))};
                                      })[0];
        Value squares = buildGeneric(
            b, loc, {x, mean}, {full, row}, {filledTensor(b, loc, rowType.getShape(), f, 0.0)}, {row},
            reduce, [&](OpBuilder &nb, Location l, ValueRange a) {
              Value d = nb.create<arith::SubFOp>(l, a[0], a[1]);
              return SmallVector<Value>{
                  nb.create<arith::AddFOp>(l, a[2], nb.create<arith::MulFOp>(l, d, d))};
            })[0];
        Value rstd = buildElementwise(
            b, loc, TypeRange{rowType}, {squares}, [&](OpBuilder &nb, Location l, ValueRange a) {
              Value var = nb.create<arith::DivFOp>(l, a[0], cst(nb, l, a[0], static_cast<double>(D)));
              Value root = nb.create<math::SqrtOp>(
                  l, nb.create<arith::AddFOp>(l, var, cst(nb, l, a[0], epsilon)));
              return SmallVector<Value>{
                  nb.create<arith::DivFOp>(l, cst(nb, l, a[0], 1.0), root)};
            })[0];
        Value y = buildGeneric(
            b, loc, {x, mean, rstd, o.getScale(), o.getBias()}, {full, row, row, channel, channel},
            {b.create<tensor::EmptyOp>(loc, type.getShape(), f)}, {full}, parallel,
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Value centered = nb.create<arith::SubFOp>(l, a[0], a[1]);
              Value scaled = nb.create<arith::MulFOp>(
                  l, nb.create<arith::MulFOp>(l, centered, a[2]), a[3]);
              return SmallVector<Value>{nb.create<arith::AddFOp>(l, scaled, a[4])};
            })[0];
        return SmallVector<Value>{y, mean, rstd};
      })
      .Case([&](LayerNormGradOp o) -> FailureOr<SmallVector<Value>> {
        // With g = dy gamma and xhat = (x - mean) rstd:
        // dx = rstd (g - mean(g) - xhat mean(g xhat)), dgamma = sum dy xhat,
        // dbeta = sum dy (sums over all rows).
        RankedTensorType type = resultType();
        Type f = type.getElementType();
        LastAxisLayout layout = lastAxisLayout(b, type, o.getScale());
        int64_t n = layout.rank, axis = layout.axis, D = layout.size;
        AffineMap full = layout.full, row = layout.row, channel = layout.channel;
        SmallVector<utils::IteratorType> reduce = layout.reduce, parallel = layout.parallel;
        SmallVector<utils::IteratorType> columns(n, utils::IteratorType::reduction);
        columns[axis] = utils::IteratorType::parallel;
        auto rowType = cast<RankedTensorType>(o.getSavedMean().getType());
        auto vectorType = cast<RankedTensorType>(op->getResult(1).getType());
        Value dy = o.getGradOutput(), x = o.getInput(), gamma = o.getScale();
        Value mean = o.getSavedMean(), rstd = o.getSavedRstd();
        auto xhatOf = [](OpBuilder &nb, Location l, Value xv, Value m, Value r) -> Value {
          return nb.create<arith::MulFOp>(l, nb.create<arith::SubFOp>(l, xv, m), r);
        };
        SmallVector<Value> sums = buildGeneric(
            b, loc, {dy, x, gamma, mean, rstd}, {full, full, channel, row, row},
            {filledTensor(b, loc, rowType.getShape(), f, 0.0),
             filledTensor(b, loc, rowType.getShape(), f, 0.0)},
            {row, row}, reduce, [&](OpBuilder &nb, Location l, ValueRange a) {
              Value xhat = xhatOf(nb, l, a[1], a[3], a[4]);
              Value g = nb.create<arith::MulFOp>(l, a[0], a[2]);
              return SmallVector<Value>{
                  nb.create<arith::AddFOp>(l, a[5], g),
                  nb.create<arith::AddFOp>(l, a[6], nb.create<arith::MulFOp>(l, g, xhat))};
            });
        SmallVector<Value> columnSums = buildGeneric(
            b, loc, {dy, x, mean, rstd}, {full, full, row, row},
            {filledTensor(b, loc, vectorType.getShape(), f, 0.0),
             filledTensor(b, loc, vectorType.getShape(), f, 0.0)},
            {channel, channel}, columns, [&](OpBuilder &nb, Location l, ValueRange a) {
              Value xhat = xhatOf(nb, l, a[1], a[2], a[3]);
              return SmallVector<Value>{
                  nb.create<arith::AddFOp>(l, a[4], nb.create<arith::MulFOp>(l, a[0], xhat)),
                  nb.create<arith::AddFOp>(l, a[5], a[0])};
            });
        Value dx = buildGeneric(
            b, loc, {dy, x, gamma, mean, rstd, sums[0], sums[1]},
            {full, full, channel, row, row, row, row},
            {b.create<tensor::EmptyOp>(loc, type.getShape(), f)}, {full}, parallel,
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Value size = cst(nb, l, a[0], static_cast<double>(D));
              Value meanG = nb.create<arith::DivFOp>(l, a[5], size);
              Value meanGX = nb.create<arith::DivFOp>(l, a[6], size);
              Value xhat = xhatOf(nb, l, a[1], a[3], a[4]);
              Value g = nb.create<arith::MulFOp>(l, a[0], a[2]);
              Value inner = nb.create<arith::SubFOp>(
                  l, nb.create<arith::SubFOp>(l, g, meanG),
                  nb.create<arith::MulFOp>(l, xhat, meanGX));
              return SmallVector<Value>{nb.create<arith::MulFOp>(l, a[4], inner)};
            })[0];
        return SmallVector<Value>{dx, columnSums[0], columnSums[1]};
      })
      .Case([&](RMSNormOp o) -> FailureOr<SmallVector<Value>> {
        // As lib/Eval's rmsNorm, over the last dimension: the row sum of
        // squares, rstd = 1/sqrt(sum/D + eps), y = x rstd gamma.
        RankedTensorType type = resultType();
        Type f = type.getElementType();
        LastAxisLayout layout = lastAxisLayout(b, type, o.getScale());
        int64_t D = layout.size;
        AffineMap full = layout.full, row = layout.row, channel = layout.channel;
        auto rowType = cast<RankedTensorType>(op->getResult(1).getType());
        double epsilon = o.getEpsilon().convertToDouble();
        Value x = o.getInput();
        Value squares = buildGeneric(
            b, loc, {x}, {full}, {filledTensor(b, loc, rowType.getShape(), f, 0.0)}, {row},
            layout.reduce, [&](OpBuilder &nb, Location l, ValueRange a) {
              return SmallVector<Value>{
                  nb.create<arith::AddFOp>(l, a[1], nb.create<arith::MulFOp>(l, a[0], a[0]))};
            })[0];
        Value rstd = buildElementwise(
            b, loc, TypeRange{rowType}, {squares}, [&](OpBuilder &nb, Location l, ValueRange a) {
              Value meanSquare =
                  nb.create<arith::DivFOp>(l, a[0], cst(nb, l, a[0], static_cast<double>(D)));
              Value root = nb.create<math::SqrtOp>(
                  l, nb.create<arith::AddFOp>(l, meanSquare, cst(nb, l, a[0], epsilon)));
              return SmallVector<Value>{
                  nb.create<arith::DivFOp>(l, cst(nb, l, a[0], 1.0), root)};
            })[0];
        Value y = buildGeneric(
            b, loc, {x, rstd, o.getScale()}, {full, row, channel},
            {b.create<tensor::EmptyOp>(loc, type.getShape(), f)}, {full}, layout.parallel,
            [&](OpBuilder &nb, Location l, ValueRange a) {
              return SmallVector<Value>{nb.create<arith::MulFOp>(
                  l, nb.create<arith::MulFOp>(l, a[0], a[1]), a[2])};
            })[0];
        return SmallVector<Value>{y, rstd};
      })
      .Case([&](RMSNormGradOp o) -> FailureOr<SmallVector<Value>> {
        // With g = dy gamma and xhat = x rstd: dx = rstd (g - xhat mean(g xhat)),
        // dgamma = sum dy xhat (over all rows).
        RankedTensorType type = resultType();
        Type f = type.getElementType();
        LastAxisLayout layout = lastAxisLayout(b, type, o.getScale());
        int64_t n = layout.rank, axis = layout.axis, D = layout.size;
        AffineMap full = layout.full, row = layout.row, channel = layout.channel;
        SmallVector<utils::IteratorType> columns(n, utils::IteratorType::reduction);
        columns[axis] = utils::IteratorType::parallel;
        auto rowType = cast<RankedTensorType>(o.getSavedRstd().getType());
        auto vectorType = cast<RankedTensorType>(op->getResult(1).getType());
        Value dy = o.getGradOutput(), x = o.getInput(), gamma = o.getScale();
        Value rstd = o.getSavedRstd();
        Value dot = buildGeneric(
            b, loc, {dy, x, gamma, rstd}, {full, full, channel, row},
            {filledTensor(b, loc, rowType.getShape(), f, 0.0)}, {row}, layout.reduce,
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Value xhat = nb.create<arith::MulFOp>(l, a[1], a[3]);
              Value g = nb.create<arith::MulFOp>(l, a[0], a[2]);
              return SmallVector<Value>{
                  nb.create<arith::AddFOp>(l, a[4], nb.create<arith::MulFOp>(l, g, xhat))};
            })[0];
        Value dgamma = buildGeneric(
            b, loc, {dy, x, rstd}, {full, full, row},
            {filledTensor(b, loc, vectorType.getShape(), f, 0.0)}, {channel}, columns,
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Value xhat = nb.create<arith::MulFOp>(l, a[1], a[2]);
              return SmallVector<Value>{
                  nb.create<arith::AddFOp>(l, a[3], nb.create<arith::MulFOp>(l, a[0], xhat))};
            })[0];
        Value dx = buildGeneric(
            b, loc, {dy, x, gamma, rstd, dot}, {full, full, channel, row, row},
            {b.create<tensor::EmptyOp>(loc, type.getShape(), f)}, {full}, layout.parallel,
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Value meanGX =
                  nb.create<arith::DivFOp>(l, a[4], cst(nb, l, a[0], static_cast<double>(D)));
              Value xhat = nb.create<arith::MulFOp>(l, a[1], a[3]);
              Value g = nb.create<arith::MulFOp>(l, a[0], a[2]);
              Value inner =
                  nb.create<arith::SubFOp>(l, g, nb.create<arith::MulFOp>(l, xhat, meanGX));
              return SmallVector<Value>{nb.create<arith::MulFOp>(l, a[3], inner)};
            })[0];
        return SmallVector<Value>{dx, dgamma};
      })
      .Case<CrossEntropyOp, CrossEntropyGradOp>([&](auto o) -> FailureOr<SmallVector<Value>> {
        // As lib/Eval: per row peak + log(sum exp(x - peak)) - x[label],
        // averaged over rows; the gradient is (softmax - onehot) dloss / rows.
        Value logits = o.getLogits(), labels = o.getLabels();
        auto type = cast<RankedTensorType>(logits.getType());
        int64_t n = type.getRank(), axis = n - 1, classes = type.getDimSize(axis);
        int64_t rows = type.getNumElements() / classes;
        Type f = type.getElementType();
        MLIRContext *ctx = b.getContext();
        checkLabels(b, loc, op, labels, classes);
        AffineMap full = b.getMultiDimIdentityMap(n), row = droppedAxisMap(ctx, n, axis);
        SmallVector<utils::IteratorType> reduce(n, utils::IteratorType::parallel);
        reduce[axis] = utils::IteratorType::reduction;
        auto rowType = cast<RankedTensorType>(labels.getType()).clone(f);
        Value peak = buildGeneric(b, loc, {logits}, {full},
                                  {filledTensor(b, loc, rowType.getShape(), f, -INFINITY)}, {row},
                                  reduce, [&](OpBuilder &nb, Location l, ValueRange a) {
                                    return SmallVector<Value>{
                                        nb.create<arith::MaximumFOp>(l, a[1], a[0])};
                                  })[0];
        Value sum = buildGeneric(
            b, loc, {logits, peak}, {full, row}, {filledTensor(b, loc, rowType.getShape(), f, 0.0)},
            {row}, reduce, [&](OpBuilder &nb, Location l, ValueRange a) {
              Value e = nb.create<math::ExpOp>(l, nb.create<arith::SubFOp>(l, a[0], a[1]));
              return SmallVector<Value>{nb.create<arith::AddFOp>(l, a[2], e)};
            })[0];
        auto isLabel = [&](OpBuilder &nb, Location l, Value label) -> Value {
          Value c = nb.create<arith::IndexCastOp>(l, nb.getI64Type(),
                                                  nb.create<linalg::IndexOp>(l, axis));
          return nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, c, label);
        };
        if constexpr (std::is_same_v<decltype(o), CrossEntropyOp>) {
          // The label's logit, picked by a masked reduction along the row.
          Value picked = buildGeneric(
              b, loc, {logits, labels}, {full, row},
              {filledTensor(b, loc, rowType.getShape(), f, 0.0)}, {row}, reduce,
              [&](OpBuilder &nb, Location l, ValueRange a) {
                Value v = nb.create<arith::SelectOp>(l, isLabel(nb, l, a[1]), a[0], a[2]);
                return SmallVector<Value>{v};
              })[0];
          SmallVector<AffineExpr> none;
          SmallVector<utils::IteratorType> all(n - 1, utils::IteratorType::reduction);
          AffineMap rowsIdentity = b.getMultiDimIdentityMap(n - 1);
          Value total = buildGeneric(
              b, loc, {peak, sum, picked}, {rowsIdentity, rowsIdentity, rowsIdentity},
              {filledTensor(b, loc, {}, f, 0.0)}, {AffineMap::get(n - 1, 0, none, ctx)}, all,
              [&](OpBuilder &nb, Location l, ValueRange a) {
                Value lse = nb.create<arith::AddFOp>(l, a[0], nb.create<math::LogOp>(l, a[1]));
                Value term = nb.create<arith::SubFOp>(l, lse, a[2]);
                return SmallVector<Value>{nb.create<arith::AddFOp>(l, a[3], term)};
              })[0];
          return buildElementwise(b, loc, TypeRange{resultType()}, {total},
                                  [&](OpBuilder &nb, Location l, ValueRange a) {
                                    return SmallVector<Value>{nb.create<arith::DivFOp>(
                                        l, a[0], cst(nb, l, a[0], static_cast<double>(rows)))};
                                  });
        } else {
          SmallVector<AffineExpr> none;
          SmallVector<utils::IteratorType> parallel(n, utils::IteratorType::parallel);
          Value dlogits = buildGeneric(
              b, loc, {logits, peak, sum, labels, o.getGradLoss()},
              {full, row, row, row, AffineMap::get(n, 0, none, ctx)},
              {b.create<tensor::EmptyOp>(loc, type.getShape(), f)}, {full}, parallel,
              [&](OpBuilder &nb, Location l, ValueRange a) {
                Value p = nb.create<arith::DivFOp>(
                    l, nb.create<math::ExpOp>(l, nb.create<arith::SubFOp>(l, a[0], a[1])), a[2]);
                Value shifted = nb.create<arith::SubFOp>(l, p, cst(nb, l, p, 1.0));
                p = nb.create<arith::SelectOp>(l, isLabel(nb, l, a[3]), shifted, p);
                Value factor =
                    nb.create<arith::DivFOp>(l, a[4], cst(nb, l, p, static_cast<double>(rows)));
                return SmallVector<Value>{nb.create<arith::MulFOp>(l, p, factor)};
              })[0];
          return SmallVector<Value>{dlogits};
        }
      })
      .Case([&](TransferOp o) -> FailureOr<SmallVector<Value>> {
        // One host: a transfer between device kinds moves nothing.
        return SmallVector<Value>{o.getInput()};
      })
      .Case([&](BatchNormRunningStatsOp o) -> FailureOr<SmallVector<Value>> {
        // As het-eval's kernel, channel by channel.
        double momentum = o.getMomentum().convertToDouble();
        double epsilon = o.getEpsilon().convertToDouble();
        double count = o.statisticsCount();
        return buildElementwise(
            b, loc, op->getResultTypes(),
            ValueRange{o.getRunningMean(), o.getRunningVar(), o.getMean(), o.getInvStd()},
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Value keep = cst(nb, l, a[0], 1.0 - momentum), m = cst(nb, l, a[0], momentum);
              Value newMean = nb.create<arith::AddFOp>(
                  l, nb.create<arith::MulFOp>(l, keep, a[0]),
                  nb.create<arith::MulFOp>(l, m, a[2]));
              Value variance = nb.create<arith::SubFOp>(
                  l,
                  nb.create<arith::DivFOp>(l, cst(nb, l, a[0], 1.0),
                                           nb.create<arith::MulFOp>(l, a[3], a[3])),
                  cst(nb, l, a[0], epsilon));
              Value unbiased =
                  nb.create<arith::MulFOp>(l, variance, cst(nb, l, a[0], count / (count - 1)));
              Value newVar = nb.create<arith::AddFOp>(
                  l, nb.create<arith::MulFOp>(l, keep, a[1]),
                  nb.create<arith::MulFOp>(l, m, unbiased));
              return SmallVector<Value>{newMean, newVar};
            });
      })
      // Loss scaling (torch.amp.GradScaler's unscale_, its skipped step and
      // update). 1 / scale is taken in f64 and rounded to f32, as PyTorch
      // takes it; an element is not finite where x - x is NaN (no fast-math
      // flags here, so LLVM keeps the subtraction).
      .Case([&](UnscaleGradientsOp o) -> FailureOr<SmallVector<Value>> {
        auto scalar = RankedTensorType::get({}, b.getF32Type());
        Value inverse =
            buildElementwise(b, loc, TypeRange{scalar}, ValueRange{o.getScale()},
                             [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
                               Value wide = nb.create<arith::ExtFOp>(l, nb.getF64Type(), a[0]);
                               Value one = nb.create<arith::ConstantOp>(l, nb.getF64FloatAttr(1.0));
                               Value reciprocal = nb.create<arith::DivFOp>(l, one, wide);
                               return {nb.create<arith::TruncFOp>(l, nb.getF32Type(), reciprocal)};
                             })[0];
        Value found = filledTensor(b, loc, {}, b.getF32Type(), 0.0);
        SmallVector<Value> results{found};
        for (Value gradient : o.getGradients()) {
          results.push_back(scaledBy(gradient, inverse));
          Value nonFinite = buildReduction(
              b, loc, gradient, scalar, {}, 0.0, [&](OpBuilder &nb, Location l, Value acc, Value x) {
                Value difference = nb.create<arith::SubFOp>(l, x, x);
                Value nan = nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNO, difference,
                                                     difference);
                Value one = nb.create<arith::ConstantOp>(l, nb.getF32FloatAttr(1.0));
                return nb.create<arith::SelectOp>(l, nan, one, acc).getResult();
              });
          results[0] = buildElementwise(b, loc, TypeRange{scalar}, ValueRange{results[0], nonFinite},
                                        [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
                                          return {nb.create<arith::MaximumFOp>(l, a[0], a[1])};
                                        })[0];
        }
        return results;
      })
      // Gradient clipping (torch.nn.utils.clip_grad_norm_): each tensor's
      // squares summed in f32, the sums added; the factor
      // min(1, max_norm / (norm + 1e-6)) in f32, as PyTorch computes it.
      .Case([&](SquaredNormOp o) -> FailureOr<SmallVector<Value>> {
        auto scalar = RankedTensorType::get({}, b.getF32Type());
        Value total = filledTensor(b, loc, {}, b.getF32Type(), 0.0);
        auto add = [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
          return {nb.create<arith::AddFOp>(l, a[0], a[1])};
        };
        for (Value tensor : o.getTensors()) {
          Value squares = buildReduction(
              b, loc, tensor, scalar, {}, 0.0, [&](OpBuilder &nb, Location l, Value acc, Value x) {
                if (x.getType() != nb.getF32Type())
                  x = nb.create<arith::ExtFOp>(l, nb.getF32Type(), x);
                return nb.create<arith::AddFOp>(l, acc, nb.create<arith::MulFOp>(l, x, x))
                    .getResult();
              });
          total = buildElementwise(b, loc, TypeRange{scalar}, ValueRange{total, squares}, add)[0];
        }
        double weight = o.getWeight().convertToDouble();
        if (weight != 1.0)
          total = buildElementwise(
              b, loc, TypeRange{scalar}, ValueRange{total},
              [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
                return {nb.create<arith::MulFOp>(
                    l, a[0], nb.create<arith::ConstantOp>(
                                 l, nb.getF32FloatAttr(static_cast<float>(weight))))};
              })[0];
        return SmallVector<Value>{total};
      })
      .Case([&](ClipByNormOp o) -> FailureOr<SmallVector<Value>> {
        auto scalar = RankedTensorType::get({}, b.getF32Type());
        float maxNorm = static_cast<float>(o.getMaxNorm().convertToDouble());
        Value factor = buildElementwise(
            b, loc, TypeRange{scalar}, ValueRange{o.getSquaredNorm()},
            [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
              auto f32 = [&](float v) -> Value {
                return nb.create<arith::ConstantOp>(l, nb.getF32FloatAttr(v));
              };
              Value norm = nb.create<math::SqrtOp>(l, a[0]);
              Value coefficient = nb.create<arith::DivFOp>(
                  l, f32(maxNorm), nb.create<arith::AddFOp>(l, norm, f32(1e-6f)));
              return {nb.create<arith::MinimumFOp>(l, coefficient, f32(1.0f))};
            })[0];
        SmallVector<Value> results;
        for (Value gradient : o.getGradients())
          results.push_back(scaledBy(gradient, factor));
        return results;
      })
      .Case([&](SelectOp o) -> FailureOr<SmallVector<Value>> {
        return buildElementwise(b, loc, TypeRange{resultType()},
                                ValueRange{o.getPredicate(), o.getOnTrue(), o.getOnFalse()},
                                [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
                                  Value zero = nb.create<arith::ConstantOp>(l, nb.getF32FloatAttr(0.0));
                                  Value set = nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNE,
                                                                       a[0], zero);
                                  return {nb.create<arith::SelectOp>(l, set, a[1], a[2])};
                                });
      })
      .Case([&](LossScaleUpdateOp o) -> FailureOr<SmallVector<Value>> {
        double growth = o.getGrowthFactor().convertToDouble();
        double backoff = o.getBackoffFactor().convertToDouble();
        double init = o.getInitScale().convertToDouble();
        double interval = static_cast<double>(o.getGrowthInterval());
        return buildElementwise(
            b, loc, op->getResultTypes(),
            ValueRange{o.getFoundInf(), o.getRatio(), o.getGrowthTracker()},
            [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
              auto f32 = [&](double v) -> Value {
                return nb.create<arith::ConstantOp>(l, nb.getF32FloatAttr(static_cast<float>(v)));
              };
              Value found = nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNE, a[0], f32(0));
              Value ratio = a[1], count = a[2];
              Value next = nb.create<arith::AddFOp>(l, count, f32(1));
              Value reached = nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OGE, next,
                                                       f32(interval));
              Value grown = nb.create<arith::MulFOp>(l, ratio, f32(growth));
              Value scale = nb.create<arith::MulFOp>(l, grown, f32(init));
              Value difference = nb.create<arith::SubFOp>(l, scale, scale);
              Value finite = nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::ORD, difference,
                                                      difference);
              Value grownIfFinite = nb.create<arith::SelectOp>(l, finite, grown, ratio);
              Value goodRatio = nb.create<arith::SelectOp>(l, reached, grownIfFinite, ratio);
              Value goodCount = nb.create<arith::SelectOp>(l, reached, f32(0), next);
              Value backedOff = nb.create<arith::MulFOp>(l, ratio, f32(backoff));
              return {nb.create<arith::SelectOp>(l, found, backedOff, goodRatio),
                      nb.create<arith::SelectOp>(l, found, f32(0), goodCount)};
            });
      })
      .Case([&](SGDOp o) -> FailureOr<SmallVector<Value>> {
        Type element = resultType().getElementType();
        Value lr = runtimeLearningRate(b, loc, op, o.getLr().convertToDouble(), element);
        double momentum = o.getMomentum().convertToDouble();
        double decay = o.getWeightDecay().convertToDouble();
        bool nesterov = o.getNesterov();
        return buildElementwise(
            b, loc, op->getResultTypes(),
            ValueRange{o.getParam(), o.getGrad(), o.getMomentumBuffer()},
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Value p = a[0], g = a[1], buffer = a[2];
              if (decay != 0)
                g = nb.create<arith::AddFOp>(
                    l, g, nb.create<arith::MulFOp>(l, cst(nb, l, p, decay), p));
              Value step = g, newBuffer = buffer;
              if (momentum != 0) {
                newBuffer = nb.create<arith::AddFOp>(
                    l, nb.create<arith::MulFOp>(l, cst(nb, l, p, momentum), buffer), g);
                step = nesterov ? nb.create<arith::AddFOp>(
                                      l, g,
                                      nb.create<arith::MulFOp>(l, cst(nb, l, p, momentum),
                                                               newBuffer))
                                : newBuffer;
              }
              Value newParam =
                  nb.create<arith::SubFOp>(l, p, nb.create<arith::MulFOp>(l, lr, step));
              return SmallVector<Value>{newParam, newBuffer};
            });
      })
      .Case([&](AdamOp o) -> FailureOr<SmallVector<Value>> {
        // As torch.optim.Adam (and het-eval): the bias corrections, the step
        // size and the decoupled decay factor in double, rounded once; the
        // per-element arithmetic in the element type. The step's factors are
        // computed once, by a 0-d generic of their own that the element loop
        // reads broadcast: left in its body (LLVM hoists them anyway) their
        // f64 pow and sqrt made the loop vectorizer pick 4 lanes, the width
        // of a double vector, for the whole f32 update (xmm on AVX-512).
        // A generic rather than host scalars: on a GPU the step lives in
        // device memory, and the factors' generic becomes a kernel too.
        Value lr = runtimeLearningRate(b, loc, op, o.getLr().convertToDouble(), b.getF64Type());
        double beta1 = o.getBeta1().convertToDouble(), beta2 = o.getBeta2().convertToDouble();
        double epsilon = o.getEpsilon().convertToDouble();
        double decay = o.getWeightDecay().convertToDouble();
        bool decoupled = decay != 0 && o.getDecoupled();
        Type f = cast<RankedTensorType>(o.getParam().getType()).getElementType();
        auto scalar = RankedTensorType::get({}, f);
        SmallVector<Type> factorTypes(decoupled ? 3 : 2, scalar);
        SmallVector<Value> factors = buildElementwise(
            b, loc, factorTypes, ValueRange{o.getStep()},
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Type f64 = nb.getF64Type();
              auto exact = [&](double x) -> Value {
                return nb.create<arith::ConstantOp>(l, nb.getF64FloatAttr(x));
              };
              auto rounded = [&](Value x) -> Value {
                return f == f64 ? x : nb.create<arith::TruncFOp>(l, f, x).getResult();
              };
              Value stepF = nb.create<arith::SIToFPOp>(l, f64, a[0]);
              Value c1 = nb.create<arith::SubFOp>(
                  l, exact(1.0), nb.create<math::PowFOp>(l, exact(beta1), stepF));
              Value c2 = nb.create<arith::SubFOp>(
                  l, exact(1.0), nb.create<math::PowFOp>(l, exact(beta2), stepF));
              SmallVector<Value> out{rounded(nb.create<arith::DivFOp>(l, lr, c1)),
                                     rounded(nb.create<math::SqrtOp>(l, c2))};
              if (decoupled)
                out.push_back(rounded(nb.create<arith::SubFOp>(
                    l, exact(1.0), nb.create<arith::MulFOp>(l, lr, exact(decay)))));
              return out;
            });
        SmallVector<Value> inputs{o.getParam(), o.getGrad(), o.getExpAvg(), o.getExpAvgSq()};
        inputs.append(factors.begin(), factors.end());
        SmallVector<Type> types{op->getResultTypes()[0], op->getResultTypes()[1],
                                op->getResultTypes()[2]};
        return buildElementwise(
            b, loc, types, inputs, [&](OpBuilder &nb, Location l, ValueRange a) {
              Value value = a[0], g = a[1], m = a[2], v = a[3];
              Value stepSize = a[4], c2Sqrt = a[5];
              if (decoupled)
                value = nb.create<arith::MulFOp>(l, value, a[6]);
              else if (decay != 0)
                g = nb.create<arith::AddFOp>(
                    l, g, nb.create<arith::MulFOp>(l, cst(nb, l, value, decay), value));
              Value newM = nb.create<arith::AddFOp>(
                  l, nb.create<arith::MulFOp>(l, cst(nb, l, value, beta1), m),
                  nb.create<arith::MulFOp>(l, cst(nb, l, value, 1 - beta1), g));
              Value newV = nb.create<arith::AddFOp>(
                  l, nb.create<arith::MulFOp>(l, cst(nb, l, value, beta2), v),
                  nb.create<arith::MulFOp>(
                      l, nb.create<arith::MulFOp>(l, cst(nb, l, value, 1 - beta2), g), g));
              Value denominator = nb.create<arith::AddFOp>(
                  l, nb.create<arith::DivFOp>(l, nb.create<math::SqrtOp>(l, newV), c2Sqrt),
                  cst(nb, l, value, epsilon));
              Value update = nb.create<arith::DivFOp>(
                  l, nb.create<arith::MulFOp>(l, stepSize, newM), denominator);
              return SmallVector<Value>{nb.create<arith::SubFOp>(l, value, update), newM, newV};
            });
      })
      .Default([&](Operation *) -> FailureOr<SmallVector<Value>> {
        return op->emitOpError("has no linalg lowering");
      });
}
