//===- LinalgBuilders.cpp - building blocks of het's linalg lowering -----===//

#include "LinalgBuilders.h"

#include "Lowering.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;

namespace mlir::het::lowering {


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
  return buildReduction(b, loc, input, resultType, dropped, 0.0,
                        [](OpBuilder &nb, Location l, Value accumulated, Value element) {
                          return nb.create<arith::AddFOp>(l, accumulated, element).getResult();
                        });
}

Value buildReduction(OpBuilder &b, Location loc, Value input, RankedTensorType resultType,
                     ArrayRef<int64_t> dropped, double initial, ReductionCombiner combine) {
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
  Value start = constantLike(b, loc, element, initial);
  Value init = b.create<linalg::FillOp>(loc, start, empty).getResult(0);
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(n),
                              AffineMap::get(n, 0, outExprs, context)};
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, ValueRange{input}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nested, Location l, ValueRange args) {
        nested.create<linalg::YieldOp>(l, combine(nested, l, args[1], args[0]));
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
namespace {
/// `callee(const int64_t *values, count, bound)`: stops the run unless
/// every value is in [0, bound).
void checkBounds(OpBuilder &b, Location loc, Operation *op, StringRef callee, Value values,
                 int64_t bound) {
  auto module = op->getParentOfType<ModuleOp>();
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto i64 = b.getI64Type();
  declareRuntimeFunction(module, callee, b.getFunctionType({ptr, i64, i64}, {}));
  int64_t count = cast<RankedTensorType>(values.getType()).getNumElements();
  b.create<func::CallOp>(loc, callee, TypeRange{},
                         ValueRange{tensorAddress(b, loc, values),
                                    b.create<arith::ConstantIntOp>(loc, count, 64),
                                    b.create<arith::ConstantIntOp>(loc, bound, 64)});
}
} // namespace

void checkLabels(OpBuilder &b, Location loc, Operation *op, Value labels, int64_t classes) {
  checkBounds(b, loc, op, "hetrt_check_labels", labels, classes);
}

void checkIndices(OpBuilder &b, Location loc, Operation *op, Value indices, int64_t rows) {
  checkBounds(b, loc, op, "hetrt_check_indices", indices, rows);
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

} // namespace mlir::het::lowering
