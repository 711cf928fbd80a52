//===- ContractionsToLinalg.cpp - library=mlir matmuls and convolutions --===//
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

namespace {

/// `value` as `type`: extended when it is narrower (a bf16/f16 operand read
/// by an f32 accumulator; exact).
Value extendTo(OpBuilder &b, Location loc, Value value, Type type) {
  return value.getType() == type ? value : b.create<arith::ExtFOp>(loc, type, value).getResult();
}

/// A linalg.generic accumulating `lhs * rhs` into `init`. 16-bit operands
/// of an f32 accumulator are extended before the product, which is then
/// exact (WidenLowPrecision.cpp: products on NVIDIA GPUs).
Value buildContraction(OpBuilder &b, Location loc, Value lhs, AffineMap lhsMap, Value rhs,
                       AffineMap rhsMap, Value init, AffineMap outMap,
                       ArrayRef<utils::IteratorType> iterators) {
  return buildGeneric(b, loc, {lhs, rhs}, {lhsMap, rhsMap}, {init}, {outMap}, iterators,
                      [](OpBuilder &nb, Location l, ValueRange a) {
                        Type accumulator = a[2].getType();
                        Value product =
                            nb.create<arith::MulFOp>(l, extendTo(nb, l, a[0], accumulator),
                                                     extendTo(nb, l, a[1], accumulator));
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
                        [f](OpBuilder &nb, Location l, ValueRange a) {
                          return SmallVector<Value>{extendTo(nb, l, a[0], f)};
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
  // The accumulators' type: the weight's, or f32 for 16-bit operands
  // accumulated in f32 (the results' type).
  Type f = cast<RankedTensorType>(op.getGradWeight().getType()).getElementType();
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
                            return SmallVector<Value>{nb.create<arith::AddFOp>(
                                l, a[1], extendTo(nb, l, a[0], a[1].getType()))};
                          })[0];
  return {dx, dw, db};
}

/// `source` ([N, C, S0, S1]) placed into zeros of `shape`: element (i, j)
/// goes to (low[0] + i step[0], low[1] + j step[1]). With step 1 this is
/// zero padding; with the stride as step it spreads a gradient out for the
/// transposed convolution. A zero fill and a (strided) tensor.insert_slice:
/// after bufferization a memset and a copy into a subview, row by row
/// (linalg.copy loops; the pipeline's copy function never calls MLIR's C
/// runner `memrefCopy`, which the executable does not link). A gather
/// (tensor.generate with bounds tests per element) was the earlier form:
/// LLVM vectorized it into masked gathers, 0.5-1 ms per padded activation of
/// the benchmark CNN, seven per step.
Value buildZeroBordered(OpBuilder &b, Location loc, Value source, ArrayRef<int64_t> shape,
                        ArrayRef<int64_t> low, ArrayRef<int64_t> step) {
  auto type = cast<RankedTensorType>(source.getType());
  Type f = type.getElementType();
  if (llvm::equal(shape, type.getShape()))
    return source;
  Value zeros = filledTensor(b, loc, shape, f, 0.0);
  SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(0),
                                    b.getIndexAttr(low[0]), b.getIndexAttr(low[1])};
  SmallVector<OpFoldResult> sizes;
  for (int64_t size : type.getShape())
    sizes.push_back(b.getIndexAttr(size));
  SmallVector<OpFoldResult> strides{b.getIndexAttr(1), b.getIndexAttr(1),
                                    b.getIndexAttr(step[0]), b.getIndexAttr(step[1])};
  return b.create<tensor::InsertSliceOp>(loc, source, zeros, offsets, sizes, strides);
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
/// the same programs. The one exception: bf16/f16 operands of a matrix
/// product with f32 results (accumulated in f32, WidenLowPrecision.cpp).
bool allStatic(Operation *op) {
  auto isStatic = [](Type type, bool lowAllowed) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return false;
    Type element = tensor.getElementType();
    return element.isF32() || (lowAllowed && (element.isBF16() || element.isF16()));
  };
  bool lowOperands = isa<MatmulOp, LinearOp, LinearGradOp>(op);
  return llvm::all_of(op->getOperandTypes(),
                      [&](Type type) { return isStatic(type, lowOperands); }) &&
         llvm::all_of(op->getResultTypes(), [&](Type type) { return isStatic(type, false); });
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
