//===- HetToLinalg.cpp - het element-wise, layout and optimizer ops to linalg --===//
//
// Element-wise ops (with NumPy broadcasting), het.elementwise bodies,
// reductions, reshapes, transposes and the optimizer updates become
// linalg.generic / linalg.transpose / tensor reshapes, so later upstream
// passes fuse, bufferize and vectorize them. The scalar formulas follow the
// reference kernels in lib/Eval (they define the semantics).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::het;

namespace {

using BodyBuilder = function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

/// Maps an operand onto the iteration space of `resultType` as NumPy
/// broadcasting does: trailing dimensions align, size-1 dimensions repeat.
AffineMap broadcastMap(MLIRContext *context, RankedTensorType operand,
                       RankedTensorType resultType) {
  int64_t n = resultType.getRank(), k = operand.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < k; ++i) {
    int64_t d = n - k + i;
    if (operand.getDimSize(i) == 1 && resultType.getDimSize(d) != 1)
      exprs.push_back(getAffineConstantExpr(0, context));
    else
      exprs.push_back(getAffineDimExpr(d, context));
  }
  return AffineMap::get(n, 0, exprs, context);
}

/// One linalg.generic over `resultTypes`' shape (all the same) reading the
/// broadcast `inputs`; `body` computes the results from one scalar each.
SmallVector<Value> buildElementwise(OpBuilder &b, Location loc, TypeRange resultTypes,
                                    ValueRange inputs, BodyBuilder body) {
  auto shape = cast<RankedTensorType>(resultTypes.front());
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(broadcastMap(b.getContext(), cast<RankedTensorType>(input.getType()), shape));
  SmallVector<Value> inits;
  for (Type type : resultTypes) {
    auto tensor = cast<RankedTensorType>(type);
    inits.push_back(b.create<tensor::EmptyOp>(loc, tensor.getShape(), tensor.getElementType()));
    maps.push_back(b.getMultiDimIdentityMap(shape.getRank()));
  }
  SmallVector<utils::IteratorType> iterators(shape.getRank(), utils::IteratorType::parallel);
  auto generic = b.create<linalg::GenericOp>(
      loc, resultTypes, inputs, inits, maps, iterators,
      [&](OpBuilder &nested, Location l, ValueRange args) {
        nested.create<linalg::YieldOp>(l, body(nested, l, args.take_front(inputs.size())));
      });
  return SmallVector<Value>(generic.getResults());
}

Value constantLike(OpBuilder &b, Location loc, Type type, double value) {
  return b.create<arith::ConstantOp>(loc, b.getFloatAttr(type, value));
}

/// Sums `input` into `resultType`: dimensions of the input that the result
/// lacks (leading) or holds with size 1 are reduced (sum_to_shape, and
/// reduce_sum with keep_dims); `dropped` instead names reduced dimensions
/// absent from the result (reduce_sum without keep_dims).
Value buildSum(OpBuilder &b, Location loc, Value input, RankedTensorType resultType,
               ArrayRef<int64_t> dropped) {
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t n = inputType.getRank();
  MLIRContext *context = b.getContext();
  SmallVector<utils::IteratorType> iterators(n, utils::IteratorType::parallel);
  SmallVector<AffineExpr> outExprs;
  if (!dropped.empty()) {
    for (int64_t d = 0; d < n; ++d) {
      if (llvm::is_contained(dropped, d))
        iterators[d] = utils::IteratorType::reduction;
      else
        outExprs.push_back(getAffineDimExpr(d, context));
    }
  } else {
    int64_t k = resultType.getRank();
    for (int64_t d = 0; d < n - k; ++d)
      iterators[d] = utils::IteratorType::reduction;
    for (int64_t i = 0; i < k; ++i) {
      int64_t d = n - k + i;
      if (resultType.getDimSize(i) == 1 && inputType.getDimSize(d) != 1) {
        iterators[d] = utils::IteratorType::reduction;
        outExprs.push_back(getAffineConstantExpr(0, context));
      } else {
        outExprs.push_back(getAffineDimExpr(d, context));
      }
    }
  }
  Type element = resultType.getElementType();
  Value empty = b.create<tensor::EmptyOp>(loc, resultType.getShape(), element);
  Value zero = constantLike(b, loc, element, 0.0);
  Value init = b.create<linalg::FillOp>(loc, zero, empty).getResult(0);
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(n),
                              AffineMap::get(n, 0, outExprs, context)};
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, ValueRange{input}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nested, Location l, ValueRange args) {
        Value sum = nested.create<arith::AddFOp>(l, args[1], args[0]);
        nested.create<linalg::YieldOp>(l, sum);
      });
  return generic.getResult(0);
}

/// Reshape as collapse-to-1-D then expand: always valid for static shapes.
Value buildReshape(OpBuilder &b, Location loc, Value input, RankedTensorType resultType) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto group = [](int64_t rank) {
    SmallVector<ReassociationIndices> groups;
    if (rank > 0) {
      ReassociationIndices all;
      for (int64_t d = 0; d < rank; ++d)
        all.push_back(d);
      groups.push_back(all);
    }
    return groups;
  };
  Value flat = input;
  int64_t count = inputType.getNumElements();
  auto flatType = RankedTensorType::get({count}, inputType.getElementType());
  if (inputType.getRank() == 0)
    flat = b.create<tensor::ExpandShapeOp>(loc, flatType, input, group(0));
  else if (inputType.getRank() != 1)
    flat = b.create<tensor::CollapseShapeOp>(loc, flatType, input, group(inputType.getRank()));
  if (resultType.getRank() == 1)
    return flat;
  if (resultType.getRank() == 0)
    return b.create<tensor::CollapseShapeOp>(loc, resultType, flat, group(0));
  return b.create<tensor::ExpandShapeOp>(loc, resultType, flat, group(resultType.getRank()));
}

/// Reduces `inputs` (same shape) along `axis` with `combine(acc, args, ivs)`
/// starting from `init`; the result drops the axis.
Value buildAxisReduction(OpBuilder &b, Location loc, ValueRange inputs, int64_t axis,
                         double init,
                         function_ref<Value(OpBuilder &, Location, Value, ValueRange)> combine) {
  auto type = cast<RankedTensorType>(inputs.front().getType());
  int64_t n = type.getRank();
  MLIRContext *context = b.getContext();
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators(n, utils::IteratorType::parallel);
  for (int64_t d = 0; d < n; ++d) {
    if (d == axis) {
      iterators[d] = utils::IteratorType::reduction;
      continue;
    }
    shape.push_back(type.getDimSize(d));
    outExprs.push_back(getAffineDimExpr(d, context));
  }
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  Value empty = b.create<tensor::EmptyOp>(loc, shape, type.getElementType());
  Value start = constantLike(b, loc, type.getElementType(), init);
  Value filled = b.create<linalg::FillOp>(loc, start, empty).getResult(0);
  SmallVector<AffineMap> maps(inputs.size(), b.getMultiDimIdentityMap(n));
  maps.push_back(AffineMap::get(n, 0, outExprs, context));
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, inputs, ValueRange{filled}, maps, iterators,
      [&](OpBuilder &nested, Location l, ValueRange args) {
        nested.create<linalg::YieldOp>(
            l, combine(nested, l, args.back(), args.drop_back()));
      });
  return generic.getResult(0);
}

/// Maps a tensor reduced along `axis` back onto the full iteration space.
AffineMap droppedAxisMap(MLIRContext *context, int64_t rank, int64_t axis) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      exprs.push_back(getAffineDimExpr(d, context));
  return AffineMap::get(rank, 0, exprs, context);
}

/// The iteration space of a layer norm (forward or backward): rows reduced
/// along the last axis, per-feature vectors broadcast along it.
struct LastAxisLayout {
  int64_t rank, axis, size;
  AffineMap full, row, channel;
  SmallVector<utils::IteratorType> reduce, parallel;
};

LastAxisLayout lastAxisLayout(OpBuilder &b, RankedTensorType type, Value scale) {
  LastAxisLayout l;
  l.rank = type.getRank();
  l.axis = l.rank - 1;
  l.size = type.getDimSize(l.axis);
  MLIRContext *ctx = b.getContext();
  l.full = b.getMultiDimIdentityMap(l.rank);
  l.row = droppedAxisMap(ctx, l.rank, l.axis);
  l.channel = broadcastMap(ctx, cast<RankedTensorType>(scale.getType()), type);
  l.parallel.assign(l.rank, utils::IteratorType::parallel);
  l.reduce = l.parallel;
  l.reduce[l.axis] = utils::IteratorType::reduction;
  return l;
}

/// A parallel linalg.generic over `resultType` reading full-shape `inputs`
/// and axis-reduced `reduced` tensors.
Value buildWithReduced(OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
                       ValueRange reduced, int64_t axis,
                       function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  int64_t n = resultType.getRank();
  SmallVector<AffineMap> maps(inputs.size(), b.getMultiDimIdentityMap(n));
  for (size_t i = 0; i < reduced.size(); ++i)
    maps.push_back(droppedAxisMap(b.getContext(), n, axis));
  maps.push_back(b.getMultiDimIdentityMap(n));
  SmallVector<Value> all(inputs);
  all.append(reduced.begin(), reduced.end());
  Value init = b.create<tensor::EmptyOp>(loc, resultType.getShape(), resultType.getElementType());
  SmallVector<utils::IteratorType> iterators(n, utils::IteratorType::parallel);
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, all, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nested, Location l, ValueRange args) {
        nested.create<linalg::YieldOp>(l, body(nested, l, args.drop_back()));
      });
  return generic.getResult(0);
}

/// One linalg.generic with explicit maps and iterators; `body` gets the
/// input scalars then the output accumulators and returns the new outputs.
SmallVector<Value> buildGeneric(OpBuilder &b, Location loc, ValueRange inputs,
                                ArrayRef<AffineMap> inputMaps, ValueRange inits,
                                ArrayRef<AffineMap> outputMaps,
                                ArrayRef<utils::IteratorType> iterators,
                                function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.append(outputMaps.begin(), outputMaps.end());
  SmallVector<Type> types;
  for (Value init : inits)
    types.push_back(init.getType());
  auto generic = b.create<linalg::GenericOp>(
      loc, types, inputs, inits, maps, iterators,
      [&](OpBuilder &nested, Location l, ValueRange args) {
        nested.create<linalg::YieldOp>(l, body(nested, l, args));
      });
  return SmallVector<Value>(generic.getResults());
}

/// A tensor of `shape` filled with `value`.
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type element,
                   double value) {
  Value empty = b.create<tensor::EmptyOp>(loc, shape, element);
  return b.create<linalg::FillOp>(loc, constantLike(b, loc, element, value), empty).getResult(0);
}

/// Labels outside [0, classes) would index out of bounds in the generated
/// gather: the runtime checks them first and stops with the reference's
/// message (hetrt_check_labels, include/het-c/hetrt.h).
void checkLabels(OpBuilder &b, Location loc, Operation *op, Value labels, int64_t classes) {
  auto module = op->getParentOfType<ModuleOp>();
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto i64 = b.getI64Type();
  declareRuntimeFunction(module, "hetrt_check_labels", b.getFunctionType({ptr, i64, i64}, {}));
  int64_t count = cast<RankedTensorType>(labels.getType()).getNumElements();
  b.create<func::CallOp>(loc, "hetrt_check_labels", TypeRange{},
                         ValueRange{tensorAddress(b, loc, labels),
                                    b.create<arith::ConstantIntOp>(loc, count, 64),
                                    b.create<arith::ConstantIntOp>(loc, classes, 64)});
}

/// The learning rate the executable runs with: `--lr` when given, else the
/// one compiled in. Asked once per update, so one binary serves any rate.
Value runtimeLearningRate(OpBuilder &b, Location loc, Operation *op, double compiled,
                          Type element) {
  auto module = op->getParentOfType<ModuleOp>();
  auto type = b.getFunctionType({b.getF64Type()}, {b.getF64Type()});
  declareRuntimeFunction(module, "hetrt_learning_rate", type);
  Value value = b.create<arith::ConstantOp>(loc, b.getF64FloatAttr(compiled));
  Value lr = b.create<func::CallOp>(loc, "hetrt_learning_rate", TypeRange{b.getF64Type()},
                                    ValueRange{value})
                 .getResult(0);
  return element.isF64() ? lr : b.create<arith::TruncFOp>(loc, element, lr).getResult();
}

/// relu(x) = x > 0 ? x : 0 (and its gradient masks by the same test), as
/// the reference kernels write them.
Value positive(OpBuilder &nb, Location l, Value x) {
  return nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OGT, x,
                                  constantLike(nb, l, x.getType(), 0.0));
}

Value reluScalar(OpBuilder &nb, Location l, Value x) {
  return nb.create<arith::SelectOp>(l, positive(nb, l, x), x,
                                    constantLike(nb, l, x.getType(), 0.0));
}

/// gelu(x) = x/2 (1 + erf(x/sqrt 2)), or with `tanhForm` PyTorch's tanh
/// approximation; shared by het.gelu and the fused activation of the
/// generated linear layer (library=mlir).
Value geluScalar(OpBuilder &nb, Location l, Value x, bool tanhForm) {
  auto cst = [](OpBuilder &nb, Location l, Value like, double v) {
    return constantLike(nb, l, like.getType(), v);
  };
  Value half = cst(nb, l, x, 0.5), one = cst(nb, l, x, 1.0);
  Value inner;
  if (tanhForm) {
    Value x3 = nb.create<arith::MulFOp>(l, nb.create<arith::MulFOp>(l, x, x), x);
    Value poly = nb.create<arith::AddFOp>(
        l, x, nb.create<arith::MulFOp>(l, cst(nb, l, x, 0.044715), x3));
    inner = nb.create<math::TanhOp>(
        l, nb.create<arith::MulFOp>(l, cst(nb, l, x, std::sqrt(2.0 / M_PI)), poly));
  } else {
    inner = nb.create<math::ErfOp>(l, nb.create<arith::MulFOp>(l, x, cst(nb, l, x, M_SQRT1_2)));
  }
  Value hx = nb.create<arith::MulFOp>(l, half, x);
  return nb.create<arith::MulFOp>(l, hx, nb.create<arith::AddFOp>(l, one, inner));
}

} // namespace

bool mlir::het::isLoweredToLinalg(Operation *op) {
  return isa<ReluOp, ReluGradOp, GeluOp, GeluGradOp, AddOp, SubOp, MulOp, ElementwiseOp,
             BroadcastToOp, SumToShapeOp, ReduceSumOp, ReduceMeanOp, ReshapeOp, TransposeOp,
             SoftmaxOp, SoftmaxGradOp, LayerNormOp, LayerNormGradOp, CrossEntropyOp,
             CrossEntropyGradOp, SGDOp, AdamOp, TransferOp>(op);
}

FailureOr<SmallVector<Value>> mlir::het::lowerToLinalg(OpBuilder &b, Operation *op) {
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
  return llvm::TypeSwitch<Operation *, FailureOr<SmallVector<Value>>>(op)
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
        // per-element arithmetic in the element type.
        Value lr = runtimeLearningRate(b, loc, op, o.getLr().convertToDouble(), b.getF64Type());
        double beta1 = o.getBeta1().convertToDouble(), beta2 = o.getBeta2().convertToDouble();
        double epsilon = o.getEpsilon().convertToDouble();
        double decay = o.getWeightDecay().convertToDouble();
        bool decoupled = o.getDecoupled();
        SmallVector<Type> types{op->getResultTypes()[0], op->getResultTypes()[1],
                                op->getResultTypes()[2]};
        return buildElementwise(
            b, loc, types,
            ValueRange{o.getParam(), o.getGrad(), o.getExpAvg(), o.getExpAvgSq(), o.getStep()},
            [&](OpBuilder &nb, Location l, ValueRange a) {
              Value value = a[0], g = a[1], m = a[2], v = a[3];
              Type f = value.getType(), f64 = nb.getF64Type();
              auto exact = [&](double x) -> Value {
                return nb.create<arith::ConstantOp>(l, nb.getF64FloatAttr(x));
              };
              auto rounded = [&](Value x) -> Value {
                return f == f64 ? x : nb.create<arith::TruncFOp>(l, f, x).getResult();
              };
              Value stepF = nb.create<arith::SIToFPOp>(l, f64, a[4]);
              Value c1 = nb.create<arith::SubFOp>(
                  l, exact(1.0), nb.create<math::PowFOp>(l, exact(beta1), stepF));
              Value c2 = nb.create<arith::SubFOp>(
                  l, exact(1.0), nb.create<math::PowFOp>(l, exact(beta2), stepF));
              Value stepSize = rounded(nb.create<arith::DivFOp>(l, lr, c1));
              Value c2Sqrt = rounded(nb.create<math::SqrtOp>(l, c2));
              if (decay != 0) {
                if (decoupled) {
                  Value scale = rounded(nb.create<arith::SubFOp>(
                      l, exact(1.0), nb.create<arith::MulFOp>(l, lr, exact(decay))));
                  value = nb.create<arith::MulFOp>(l, value, scale);
                } else {
                  g = nb.create<arith::AddFOp>(
                      l, g, nb.create<arith::MulFOp>(l, cst(nb, l, value, decay), value));
                }
              }
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

//===----------------------------------------------------------------------===//
// library=mlir: the library ops as generated linalg contractions
//===----------------------------------------------------------------------===//
//
// The `cpu.mlir` device kind runs no hand-written kernel for matmul, linear
// layers and (groups == 1) convolutions: each becomes linalg.fill (or a
// bias broadcast) plus one linalg.generic contraction over tensors, which
// the rest of the pipeline turns into plain loops that LLVM vectorizes.
// The iteration dimensions are ordered so that the innermost loop walks the
// contiguous dimension of the output and of one operand (n for matmul, the
// output column for convolutions): that loop is then an axpy LLVM can
// vectorize without reassociating a floating-point sum, and every output
// element still accumulates its products in the evaluator's order.

namespace {

/// A linalg.generic accumulating `lhs * rhs` into `init`.
Value buildContraction(OpBuilder &b, Location loc, Value lhs, AffineMap lhsMap, Value rhs,
                       AffineMap rhsMap, Value init, AffineMap outMap,
                       ArrayRef<utils::IteratorType> iterators) {
  return buildGeneric(b, loc, {lhs, rhs}, {lhsMap, rhsMap}, {init}, {outMap}, iterators,
                      [](OpBuilder &nb, Location l, ValueRange a) {
                        Value product = nb.create<arith::MulFOp>(l, a[0], a[1]);
                        return SmallVector<Value>{nb.create<arith::AddFOp>(l, a[2], product)};
                      })[0];
}

/// Swaps the last two dimensions of `value` into a new tensor. Used where an
/// operand would otherwise be read with a stride in the innermost loop: the
/// copy costs one pass over the (small) operand, the strided loop would cost
/// a gather per multiply-add.
Value transposeLastTwo(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> permutation, shape(type.getShape());
  for (int64_t d = 0; d < rank; ++d)
    permutation.push_back(d);
  std::swap(permutation[rank - 1], permutation[rank - 2]);
  std::swap(shape[rank - 1], shape[rank - 2]);
  Value init = b.create<tensor::EmptyOp>(loc, shape, type.getElementType());
  return b.create<linalg::TransposeOp>(loc, value, init, permutation).getResult()[0];
}

/// `value` ([..., last]) as a matrix [rows, last].
Value asMatrix(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == 2)
    return value;
  int64_t last = type.getShape().back();
  auto matrix = RankedTensorType::get({type.getNumElements() / last, last}, type.getElementType());
  return buildReshape(b, loc, value, matrix);
}

Value fromMatrix(OpBuilder &b, Location loc, Value matrix, Type type) {
  auto tensorType = cast<RankedTensorType>(type);
  return tensorType.getRank() == 2 ? matrix : buildReshape(b, loc, matrix, tensorType);
}

AffineMap mapOf(MLIRContext *context, unsigned dims, ArrayRef<AffineExpr> exprs) {
  return AffineMap::get(dims, 0, exprs, context);
}

/// het.matmul: iteration space (batch..., m, k, n).
Value buildMatmul(OpBuilder &b, Location loc, MatmulOp op) {
  MLIRContext *ctx = b.getContext();
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  int64_t rank = resultType.getRank(), batch = rank - 2;
  Value lhs = op.getLhs(), rhs = op.getRhs();
  if (op.getTransposeRhs())
    rhs = transposeLastTwo(b, loc, rhs);
  unsigned dims = rank + 1;
  AffineExpr m = getAffineDimExpr(batch, ctx), k = getAffineDimExpr(batch + 1, ctx),
             n = getAffineDimExpr(batch + 2, ctx);
  SmallVector<AffineExpr> batchExprs;
  for (int64_t d = 0; d < batch; ++d)
    batchExprs.push_back(getAffineDimExpr(d, ctx));
  SmallVector<AffineExpr> lhsExprs(batchExprs), outExprs(batchExprs), rhsExprs;
  if (op.getTransposeLhs())
    lhsExprs.append({k, m});
  else
    lhsExprs.append({m, k});
  // A plain-matrix rhs is shared by every batch.
  if (cast<RankedTensorType>(rhs.getType()).getRank() == rank)
    rhsExprs = batchExprs;
  rhsExprs.append({k, n});
  outExprs.append({m, n});
  SmallVector<utils::IteratorType> iterators(dims, utils::IteratorType::parallel);
  iterators[batch + 1] = utils::IteratorType::reduction;
  Value init = filledTensor(b, loc, resultType.getShape(), resultType.getElementType(), 0.0);
  return buildContraction(b, loc, lhs, mapOf(ctx, dims, lhsExprs), rhs,
                          mapOf(ctx, dims, rhsExprs), init, mapOf(ctx, dims, outExprs),
                          iterators);
}

/// het.linear: y = act(x W^T + b) over rows of x, iteration space (r, i, o).
Value buildLinear(OpBuilder &b, Location loc, LinearOp op) {
  MLIRContext *ctx = b.getContext();
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  Type f = resultType.getElementType();
  Value x = asMatrix(b, loc, op.getInput());
  // W is [out, in]; the innermost loop runs over `out`, so read W^T.
  Value wt = transposeLastTwo(b, loc, op.getWeight());
  auto xType = cast<RankedTensorType>(x.getType());
  int64_t rows = xType.getDimSize(0), out = resultType.getShape().back();
  SmallVector<int64_t> shape{rows, out};
  AffineExpr r = getAffineDimExpr(0, ctx), i = getAffineDimExpr(1, ctx),
             o = getAffineDimExpr(2, ctx);
  // The evaluator starts each sum at the bias: so does the accumulator.
  Value init;
  if (Value bias = op.getBias())
    init = buildGeneric(b, loc, {bias}, {mapOf(ctx, 2, {getAffineDimExpr(1, ctx)})},
                        {b.create<tensor::EmptyOp>(loc, shape, f)},
                        {b.getMultiDimIdentityMap(2)},
                        {utils::IteratorType::parallel, utils::IteratorType::parallel},
                        [](OpBuilder &, Location, ValueRange a) {
                          return SmallVector<Value>{a[0]};
                        })[0];
  else
    init = filledTensor(b, loc, shape, f, 0.0);
  Value y = buildContraction(
      b, loc, x, mapOf(ctx, 3, {r, i}), wt, mapOf(ctx, 3, {i, o}), init, mapOf(ctx, 3, {r, o}),
      {utils::IteratorType::parallel, utils::IteratorType::reduction,
       utils::IteratorType::parallel});
  Activation activation = op.getActivation();
  if (activation != Activation::None) {
    auto matrixType = RankedTensorType::get(shape, f);
    y = buildElementwise(b, loc, TypeRange{matrixType}, {y},
                         [&](OpBuilder &nb, Location l, ValueRange a) {
                           // het.linear's GELU is the exact form (lib/Eval).
                           Value v = activation == Activation::ReLU
                                         ? reluScalar(nb, l, a[0])
                                         : geluScalar(nb, l, a[0], /*tanhForm=*/false);
                           return SmallVector<Value>{v};
                         })[0];
  }
  return fromMatrix(b, loc, y, resultType);
}

/// het.linear_grad: dx = dy W (r, o, i), dW = dy^T x (o, r, i), db = sum dy.
SmallVector<Value> buildLinearGrad(OpBuilder &b, Location loc, LinearGradOp op) {
  MLIRContext *ctx = b.getContext();
  Value dy = asMatrix(b, loc, op.getGradOutput()), x = asMatrix(b, loc, op.getInput());
  Value w = op.getWeight();
  auto wType = cast<RankedTensorType>(w.getType());
  Type f = wType.getElementType();
  int64_t rows = cast<RankedTensorType>(x.getType()).getDimSize(0);
  int64_t out = wType.getDimSize(0), in = wType.getDimSize(1);
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx);
  SmallVector<utils::IteratorType> middleReduced{utils::IteratorType::parallel,
                                                 utils::IteratorType::reduction,
                                                 utils::IteratorType::parallel};
  Value dx;
  if (op.getGradInput().use_empty()) {
    // A first layer's input gradient (its input is data) is never read;
    // the runtime kernels skip it too.
    auto type = cast<RankedTensorType>(op.getGradInput().getType());
    dx = b.create<tensor::EmptyOp>(loc, type.getShape(), f);
  } else {
    Value sum = buildContraction(b, loc, dy, mapOf(ctx, 3, {d0, d1}), w, mapOf(ctx, 3, {d1, d2}),
                                 filledTensor(b, loc, {rows, in}, f, 0.0), mapOf(ctx, 3, {d0, d2}),
                                 middleReduced);
    dx = fromMatrix(b, loc, sum, op.getGradInput().getType());
  }
  Value dw = buildContraction(b, loc, dy, mapOf(ctx, 3, {d1, d0}), x, mapOf(ctx, 3, {d1, d2}),
                              filledTensor(b, loc, {out, in}, f, 0.0), mapOf(ctx, 3, {d0, d2}),
                              middleReduced);
  Value db = buildGeneric(b, loc, {dy}, {b.getMultiDimIdentityMap(2)},
                          {filledTensor(b, loc, {out}, f, 0.0)}, {mapOf(ctx, 2, {d1})},
                          {utils::IteratorType::reduction, utils::IteratorType::parallel},
                          [](OpBuilder &nb, Location l, ValueRange a) {
                            return SmallVector<Value>{nb.create<arith::AddFOp>(l, a[1], a[0])};
                          })[0];
  return {dx, dw, db};
}

/// `source` ([N, C, S0, S1]) placed into zeros of `shape`: element (i, j)
/// goes to (low[0] + i step[0], low[1] + j step[1]). With step 1 this is
/// zero padding; with the stride as step it spreads a gradient out for the
/// transposed convolution. Written as a gather (tensor.generate: bounds and
/// divisibility tests, tensor.extract), because
/// - tensor.pad / tensor.insert_slice bufferize to a copy into a strided
///   subview, which lowers to a call to `memrefCopy` from MLIR's C runner
///   library, and the executable links only libhetrt;
/// - as a linalg.generic, linalg-fuse-elementwise-ops would fuse the gather
///   into the convolution and redo the bounds tests and the gather for every
///   multiply-add (measured: most of the CNN step).
Value buildZeroBordered(OpBuilder &b, Location loc, Value source, ArrayRef<int64_t> shape,
                        ArrayRef<int64_t> low, ArrayRef<int64_t> step) {
  auto type = cast<RankedTensorType>(source.getType());
  Type f = type.getElementType();
  if (llvm::equal(shape, type.getShape()))
    return source;
  auto resultType = RankedTensorType::get(shape, f);
  return b.create<tensor::GenerateOp>(
      loc, resultType, ValueRange{},
      [&](OpBuilder &nb, Location l, ValueRange at) {
        Value inside = nb.create<arith::ConstantIntOp>(l, 1, 1);
        SmallVector<Value> indices{at[0], at[1]};
        Value zeroIndex = nb.create<arith::ConstantIndexOp>(l, 0);
        for (unsigned dim = 0; dim < 2; ++dim) {
          // offset = index - low; as unsigned, a negative offset is huge, so
          // one `ult` tests both ends of [0, (S - 1) step].
          Value offset = nb.create<arith::SubIOp>(
              l, at[2 + dim], nb.create<arith::ConstantIndexOp>(l, low[dim]));
          Value span = nb.create<arith::ConstantIndexOp>(
              l, (type.getDimSize(2 + dim) - 1) * step[dim] + 1);
          inside = nb.create<arith::AndIOp>(
              l, inside, nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::ult, offset, span));
          Value position = offset;
          if (step[dim] != 1) {
            Value stride = nb.create<arith::ConstantIndexOp>(l, step[dim]);
            Value rest = nb.create<arith::RemUIOp>(l, offset, stride);
            inside = nb.create<arith::AndIOp>(
                l, inside,
                nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, rest, zeroIndex));
            position = nb.create<arith::DivUIOp>(l, offset, stride);
          }
          // Outside, read element 0 (always valid) and discard it.
          indices.push_back(nb.create<arith::SelectOp>(l, inside, position, zeroIndex));
        }
        Value value = nb.create<tensor::ExtractOp>(l, source, indices);
        nb.create<tensor::YieldOp>(
            l, nb.create<arith::SelectOp>(l, inside, value, constantLike(nb, l, f, 0.0)));
      });
}

/// `input` ([N, C, H, W]) with `padding` zeros around both spatial sides.
Value padSpatially(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> padding) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[2] += 2 * padding[0];
  shape[3] += 2 * padding[1];
  static const int64_t unit[2] = {1, 1};
  return buildZeroBordered(b, loc, input, shape, padding, unit);
}

/// The 7-D convolution iteration spaces below put two output-spatial
/// dimensions last; `tap(o, k, dim)` is the padded input coordinate
/// o * stride + k * dilation of spatial dimension `dim`.
struct TapGeometry {
  ArrayRef<int64_t> strides, padding, dilation;
  AffineExpr tap(AffineExpr o, AffineExpr k, unsigned dim) const {
    return o * strides[dim] + k * dilation[dim];
  }
};

template <typename Op> TapGeometry geometryOf(Op op) {
  return {op.getStrides(), op.getPadding(), op.getDilation()};
}

/// het.conv2d: iteration space (n, f, c, kh, kw, oh, ow) over the padded input.
Value buildConv2d(OpBuilder &b, Location loc, Conv2dOp op) {
  MLIRContext *ctx = b.getContext();
  TapGeometry g = geometryOf(op);
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  Type f = resultType.getElementType();
  SmallVector<AffineExpr> d;
  for (unsigned i = 0; i < 7; ++i)
    d.push_back(getAffineDimExpr(i, ctx));
  Value input = padSpatially(b, loc, op.getInput(), g.padding);
  Value y = buildContraction(
      b, loc, input, mapOf(ctx, 7, {d[0], d[2], g.tap(d[5], d[3], 0), g.tap(d[6], d[4], 1)}),
      op.getFilter(), mapOf(ctx, 7, {d[1], d[2], d[3], d[4]}),
      filledTensor(b, loc, resultType.getShape(), f, 0.0), mapOf(ctx, 7, {d[0], d[1], d[5], d[6]}),
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::reduction, utils::IteratorType::reduction,
       utils::IteratorType::reduction, utils::IteratorType::parallel,
       utils::IteratorType::parallel});
  Value bias = op.getBias();
  if (!bias)
    return y;
  // As the evaluator: the bias is added after the sum.
  return buildGeneric(b, loc, {y, bias},
                      {b.getMultiDimIdentityMap(4), mapOf(ctx, 4, {d[1]})},
                      {b.create<tensor::EmptyOp>(loc, resultType.getShape(), f)},
                      {b.getMultiDimIdentityMap(4)},
                      SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
                      [](OpBuilder &nb, Location l, ValueRange a) {
                        return SmallVector<Value>{nb.create<arith::AddFOp>(l, a[0], a[1])};
                      })[0];
}

/// het.conv2d_grad_filter: dW[f, c, kh, kw] = sum over (n, oh, ow) of
/// dy[n, f, oh, ow] x_padded[n, c, tap(oh, kh), tap(ow, kw)].
Value buildConv2dGradFilter(OpBuilder &b, Location loc, Conv2dGradFilterOp op) {
  MLIRContext *ctx = b.getContext();
  TapGeometry g = geometryOf(op);
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  SmallVector<AffineExpr> d;
  for (unsigned i = 0; i < 7; ++i)
    d.push_back(getAffineDimExpr(i, ctx));
  // The sum over (n, oh, ow) would leave the innermost loop a scalar float
  // reduction (LLVM does not reassociate it, so it is not vectorized).
  // Instead, partial sums per output column: (f, c, kh, kw, n, oh, ow) into
  // [F, C, KH, KW, OW] with ow parallel and innermost (contiguous in dy and,
  // at stride 1, in the input), then a short sum over ow.
  auto dyType = cast<RankedTensorType>(op.getGradOutput().getType());
  Type f = resultType.getElementType();
  SmallVector<int64_t> partialShape(resultType.getShape());
  partialShape.push_back(dyType.getDimSize(3));
  Value input = padSpatially(b, loc, op.getInput(), g.padding);
  Value partial = buildContraction(
      b, loc, op.getGradOutput(), mapOf(ctx, 7, {d[4], d[0], d[5], d[6]}), input,
      mapOf(ctx, 7, {d[4], d[1], g.tap(d[5], d[2], 0), g.tap(d[6], d[3], 1)}),
      filledTensor(b, loc, partialShape, f, 0.0),
      mapOf(ctx, 7, {d[0], d[1], d[2], d[3], d[6]}),
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::reduction, utils::IteratorType::reduction,
       utils::IteratorType::parallel});
  return buildGeneric(b, loc, {partial}, {b.getMultiDimIdentityMap(5)},
                      {filledTensor(b, loc, resultType.getShape(), f, 0.0)},
                      {mapOf(ctx, 5, {d[0], d[1], d[2], d[3]})},
                      {utils::IteratorType::parallel, utils::IteratorType::parallel,
                       utils::IteratorType::parallel, utils::IteratorType::parallel,
                       utils::IteratorType::reduction},
                      [](OpBuilder &nb, Location l, ValueRange a) {
                        return SmallVector<Value>{nb.create<arith::AddFOp>(l, a[1], a[0])};
                      })[0];
}

/// Whether conv2d_grad_input's transposed convolution needs no cropping:
/// the zero border (K - 1) d - p it adds to the dilated gradient must not
/// be negative.
bool gradInputBorderFits(Conv2dGradInputOp op) {
  auto filter = cast<RankedTensorType>(op.getFilter().getType());
  for (unsigned dim = 0; dim < 2; ++dim)
    if ((filter.getDimSize(2 + dim) - 1) * op.getDilation()[dim] < op.getPadding()[dim])
      return false;
  return true;
}

/// het.conv2d_grad_input as a stride-1 correlation: dy is spread out by the
/// stride (zeros between its elements) inside a border of
/// (K - 1) d - p, and correlated with the spatially flipped filter:
/// dx[n, c, h, w] = sum dy_spread[n, f, h + kh d, w + kw d] W[f, c, K-1-kh, K-1-kw].
Value buildConv2dGradInput(OpBuilder &b, Location loc, Conv2dGradInputOp op) {
  MLIRContext *ctx = b.getContext();
  TapGeometry g = geometryOf(op);
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  auto dyType = cast<RankedTensorType>(op.getGradOutput().getType());
  auto filterType = cast<RankedTensorType>(op.getFilter().getType());
  Type f = resultType.getElementType();
  int64_t kernel[2] = {filterType.getDimSize(2), filterType.getDimSize(3)};
  SmallVector<int64_t> spreadShape{dyType.getDimSize(0), dyType.getDimSize(1), 0, 0};
  int64_t low[2];
  for (unsigned dim = 0; dim < 2; ++dim) {
    int64_t reach = (kernel[dim] - 1) * g.dilation[dim];
    spreadShape[2 + dim] = resultType.getDimSize(2 + dim) + reach;
    low[dim] = reach - g.padding[dim];
  }
  Value spread = buildZeroBordered(b, loc, op.getGradOutput(), spreadShape, low, g.strides);

  // The flipped filter as [C, F, KH, KW]: the (K-1-k) reads need a pure
  // dimension elsewhere to size the loop, so they get their own generic.
  SmallVector<AffineExpr> d;
  for (unsigned i = 0; i < 7; ++i)
    d.push_back(getAffineDimExpr(i, ctx));
  SmallVector<int64_t> flippedShape{filterType.getDimSize(1), filterType.getDimSize(0),
                                    kernel[0], kernel[1]};
  Value flipped = buildGeneric(
      b, loc, {op.getFilter()},
      {mapOf(ctx, 4, {d[1], d[0], getAffineConstantExpr(kernel[0] - 1, ctx) - d[2],
                      getAffineConstantExpr(kernel[1] - 1, ctx) - d[3]})},
      {b.create<tensor::EmptyOp>(loc, flippedShape, f)}, {b.getMultiDimIdentityMap(4)},
      SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
      [](OpBuilder &, Location, ValueRange a) { return SmallVector<Value>{a[0]}; })[0];

  // (n, c, f, kh, kw, h, w): the innermost loop walks rows of dx and of the
  // spread gradient.
  static const int64_t unitStrides[2] = {1, 1};
  TapGeometry unit{unitStrides, g.padding, g.dilation};
  return buildContraction(
      b, loc, spread, mapOf(ctx, 7, {d[0], d[2], unit.tap(d[5], d[3], 0), unit.tap(d[6], d[4], 1)}),
      flipped, mapOf(ctx, 7, {d[1], d[2], d[3], d[4]}),
      filledTensor(b, loc, resultType.getShape(), f, 0.0), mapOf(ctx, 7, {d[0], d[1], d[5], d[6]}),
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::reduction, utils::IteratorType::reduction,
       utils::IteratorType::reduction, utils::IteratorType::parallel,
       utils::IteratorType::parallel});
}

/// Static f32 shapes, as the runtime kernels require: other element types
/// take the runtime path, whose error names them, so every library accepts
/// the same programs.
bool allStatic(Operation *op) {
  auto isStatic = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.hasStaticShape() && tensor.getElementType().isF32();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

} // namespace

bool mlir::het::isGeneratedAsLinalg(Operation *op) {
  if (!allStatic(op))
    return false;
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case([](MatmulOp o) {
        // lhs carries the batch; rhs has the same batch or none (the shapes
        // het.matmul's verifier admits).
        int64_t rank = cast<RankedTensorType>(o.getResult().getType()).getRank();
        int64_t lhsRank = cast<RankedTensorType>(o.getLhs().getType()).getRank();
        int64_t rhsRank = cast<RankedTensorType>(o.getRhs().getType()).getRank();
        return rank >= 2 && lhsRank == rank && (rhsRank == rank || rhsRank == 2);
      })
      .Case<LinearOp, LinearGradOp>([](auto o) {
        return cast<RankedTensorType>(o.getWeight().getType()).getRank() == 2;
      })
      // Grouped convolutions stay with the reference kernels.
      .Case<Conv2dOp, Conv2dGradFilterOp>([](auto o) { return o.getGroups() == 1; })
      .Case([](Conv2dGradInputOp o) { return o.getGroups() == 1 && gradInputBorderFits(o); })
      .Default([](Operation *) { return false; });
}

FailureOr<SmallVector<Value>> mlir::het::lowerLibraryOpToLinalg(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  return llvm::TypeSwitch<Operation *, FailureOr<SmallVector<Value>>>(op)
      .Case([&](MatmulOp o) { return SmallVector<Value>{buildMatmul(b, loc, o)}; })
      .Case([&](LinearOp o) { return SmallVector<Value>{buildLinear(b, loc, o)}; })
      .Case([&](LinearGradOp o) { return buildLinearGrad(b, loc, o); })
      .Case([&](Conv2dOp o) { return SmallVector<Value>{buildConv2d(b, loc, o)}; })
      .Case([&](Conv2dGradFilterOp o) {
        return SmallVector<Value>{buildConv2dGradFilter(b, loc, o)};
      })
      .Case([&](Conv2dGradInputOp o) {
        return SmallVector<Value>{buildConv2dGradInput(b, loc, o)};
      })
      .Default([&](Operation *) -> FailureOr<SmallVector<Value>> {
        return op->emitOpError("has no generated (library=mlir) lowering");
      });
}
