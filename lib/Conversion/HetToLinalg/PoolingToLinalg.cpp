//===- PoolingToLinalg.cpp - 2-D pooling and its gradients as linalg -------===//
//
// library=mlir (and so GPU builds): max and average pooling over NCHW and
// their gradients as linalg.generic ops, with the evaluator's semantics
// (lib/Eval/ConvKernels.cpp): padding never wins a max and is left out of
// an average's count; the first maximum of a window, in row-major window
// order, gets its gradient.
//
// Forward: one reduction over the window dimensions (a, b) of the padded
// input, read at (i * stride + a, j * stride + b); a [kh, kw] window tensor
// gives the reduction its extent, as linalg's named pooling ops do.
// Average pooling divides by each output's count of real inputs afterwards.
//
// Gradients in gather form, so every input element is one thread's sum
// without atomics: for input (h, w), the at most ceil(k / s) outputs per
// axis whose windows can cover it (CoveringOutput), in window-offset order. Max pooling first finds
// each window's argmax (a second output of the forward reduction, as a flat
// index into the input plane), then routes dy where the argmax is (h, w).
// Windows that tile the input exactly (2x2 pooling with stride 2, a global
// average pool) need no gather: each input has one output, and the gradient
// is an all-parallel scatter into the windows (scatterIntoWindows).
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"
#include "Lowering.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::het;
using namespace mlir::het::lowering;

namespace {

struct Window {
  int64_t n, c, h, w;    // input
  int64_t oh, ow;        // output
  int64_t kh, kw, sh, sw, ph, pw;

  static Window of(RankedTensorType input, RankedTensorType output, ArrayRef<int64_t> kernel,
                   ArrayRef<int64_t> strides, ArrayRef<int64_t> padding) {
    return Window{input.getDimSize(0), input.getDimSize(1), input.getDimSize(2),
                  input.getDimSize(3), output.getDimSize(2), output.getDimSize(3),
                  kernel[0], kernel[1], strides[0], strides[1], padding[0], padding[1]};
  }
  SmallVector<int64_t> inputShape() const { return {n, c, h, w}; }
  SmallVector<int64_t> outputShape() const { return {n, c, oh, ow}; }
};

utils::IteratorType par = utils::IteratorType::parallel;
utils::IteratorType red = utils::IteratorType::reduction;

Value index(OpBuilder &b, Location loc, int64_t value) {
  return b.create<arith::ConstantIndexOp>(loc, value);
}

/// `x` padded with `value` so that every window of the output lies inside.
Value padded(OpBuilder &b, Location loc, Value x, const Window &g, double value) {
  int64_t highH = std::max<int64_t>(0, (g.oh - 1) * g.sh + g.kh - g.h - g.ph);
  int64_t highW = std::max<int64_t>(0, (g.ow - 1) * g.sw + g.kw - g.w - g.pw);
  if (g.ph == 0 && g.pw == 0 && highH == 0 && highW == 0)
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  auto paddedType = RankedTensorType::get({g.n, g.c, g.h + g.ph + highH, g.w + g.pw + highW},
                                          type.getElementType());
  SmallVector<OpFoldResult> low{b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(g.ph),
                                b.getIndexAttr(g.pw)};
  SmallVector<OpFoldResult> high{b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(highH),
                                 b.getIndexAttr(highW)};
  return b.create<tensor::PadOp>(loc, paddedType, x, low, high,
                                 constantLike(b, loc, type.getElementType(), value));
}

/// Maps of the window reductions over (n, c, i, j, a, b): the padded input
/// at (n, c, i*sh + a, j*sw + b), the window at (a, b), the output at
/// (n, c, i, j).
struct WindowMaps {
  AffineMap input, window, output;
  WindowMaps(MLIRContext *ctx, const Window &g) {
    AffineExpr n = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx),
               i = getAffineDimExpr(2, ctx), j = getAffineDimExpr(3, ctx),
               a = getAffineDimExpr(4, ctx), bb = getAffineDimExpr(5, ctx);
    input = AffineMap::get(6, 0, {n, c, i * g.sh + a, j * g.sw + bb}, ctx);
    window = AffineMap::get(6, 0, {a, bb}, ctx);
    output = AffineMap::get(6, 0, {n, c, i, j}, ctx);
  }
};

Value windowTensor(OpBuilder &b, Location loc, const Window &g, Type element) {
  return b.create<tensor::EmptyOp>(loc, ArrayRef<int64_t>{g.kh, g.kw}, element);
}

/// How many outputs' windows can cover one input position along an axis:
/// ceil(kernel / stride).
int64_t coveringCandidates(int64_t kernel, int64_t stride) { return (kernel + stride - 1) / stride; }

/// For input position (h, w) = (dims 2, 3) and candidate (t, u) = (dims 4,
/// 5): the t-th output row i (and u-th column j) whose window may cover it,
/// counted down from the last, i = (h + p) / s - t, and whether its window
/// really does (i inside the output, h + p - i s inside the window). Down
/// from the last output is up the window offsets a = h + p - i s: the
/// evaluator's (row-major window) order of the terms. There are at most
/// ceil(k / s) candidates per axis, where a loop over all k window offsets
/// would mostly find none (a global average pool's gradient: k x k offsets
/// for one output).
struct CoveringOutput {
  Value i, j, valid;
  static CoveringOutput at(OpBuilder &b, Location loc, const Window &g) {
    auto along = [&](int64_t dim, int64_t candidateDim, int64_t pad, int64_t stride,
                     int64_t kernel, int64_t outputs, Value &out, Value &ok) {
      Value pos = b.create<linalg::IndexOp>(loc, dim);
      Value t = b.create<linalg::IndexOp>(loc, candidateDim);
      Value shifted = b.create<arith::AddIOp>(loc, pos, index(b, loc, pad));
      Value last = b.create<arith::DivUIOp>(loc, shifted, index(b, loc, stride));
      // i = last - t, computed so it never goes below zero.
      Value exists = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge, last, t);
      Value i = b.create<arith::SelectOp>(loc, exists, b.create<arith::SubIOp>(loc, last, t),
                                          index(b, loc, 0));
      Value offset = b.create<arith::SubIOp>(
          loc, shifted, b.create<arith::MulIOp>(loc, i, index(b, loc, stride)));
      Value inWindow = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, offset,
                                               index(b, loc, kernel));
      Value inside = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, i,
                                             index(b, loc, outputs));
      ok = b.create<arith::AndIOp>(loc, exists, b.create<arith::AndIOp>(loc, inWindow, inside));
      out = b.create<arith::SelectOp>(loc, ok, i, index(b, loc, 0));
    };
    CoveringOutput r;
    Value validI, validJ;
    along(2, 4, g.ph, g.sh, g.kh, g.oh, r.i, validI);
    along(3, 5, g.pw, g.sw, g.kw, g.ow, r.j, validJ);
    r.valid = b.create<arith::AndIOp>(loc, validI, validJ);
    return r;
  }
};

/// Real (unpadded) inputs in output (i, j)'s window along one axis.
Value countAlong(OpBuilder &b, Location loc, Value i, int64_t stride, int64_t pad,
                 int64_t kernel, int64_t size) {
  // start = i*s - p, clipped to [0, size); end = start + k, clipped too.
  Value start = b.create<arith::SubIOp>(loc, b.create<arith::MulIOp>(loc, i, index(b, loc, stride)),
                                        index(b, loc, pad));
  Value end = b.create<arith::AddIOp>(loc, start, index(b, loc, kernel));
  Value from = b.create<arith::MaxSIOp>(loc, start, index(b, loc, 0));
  Value to = b.create<arith::MinSIOp>(loc, end, index(b, loc, size));
  return b.create<arith::SubIOp>(loc, to, from);
}

/// `values` [n, c, oh, ow] divided by each output's count of real inputs.
Value dividedByCounts(OpBuilder &b, Location loc, Value values, const Window &g) {
  auto type = cast<RankedTensorType>(values.getType());
  Type element = type.getElementType();
  MLIRContext *ctx = b.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(4, ctx);
  Value init = b.create<tensor::EmptyOp>(loc, type.getShape(), element);
  return buildGeneric(
      b, loc, {values}, {identity}, {init}, {identity}, {par, par, par, par},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value rows = countAlong(nb, l, nb.create<linalg::IndexOp>(l, 2), g.sh, g.ph, g.kh, g.h);
        Value cols = countAlong(nb, l, nb.create<linalg::IndexOp>(l, 3), g.sw, g.pw, g.kw, g.w);
        Value count = nb.create<arith::MulIOp>(l, rows, cols);
        Value asInt = nb.create<arith::IndexCastOp>(l, nb.getI64Type(), count);
        Value asFloat = nb.create<arith::SIToFPOp>(l, element, asInt);
        return SmallVector<Value>{nb.create<arith::DivFOp>(l, a[0], asFloat)};
      })[0];
}

Value buildMaxPool(OpBuilder &b, Location loc, Value x, const Window &g, Type element) {
  WindowMaps maps(b.getContext(), g);
  Value input = padded(b, loc, x, g, -std::numeric_limits<double>::infinity());
  Value init = filledTensor(b, loc, g.outputShape(), element,
                            -std::numeric_limits<double>::infinity());
  return buildGeneric(b, loc, {input, windowTensor(b, loc, g, element)},
                      {maps.input, maps.window}, {init}, {maps.output},
                      {par, par, par, par, red, red},
                      [&](OpBuilder &nb, Location l, ValueRange a) {
                        // Strictly greater: the first maximum stays (and NaN
                        // never replaces it, as in the evaluator).
                        Value greater = nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OGT,
                                                                 a[0], a[2]);
                        return SmallVector<Value>{
                            nb.create<arith::SelectOp>(l, greater, a[0], a[2])};
                      })[0];
}

Value buildAvgPool(OpBuilder &b, Location loc, Value x, const Window &g, Type element) {
  WindowMaps maps(b.getContext(), g);
  Value input = padded(b, loc, x, g, 0.0);
  Value init = filledTensor(b, loc, g.outputShape(), element, 0.0);
  Value sums = buildGeneric(b, loc, {input, windowTensor(b, loc, g, element)},
                            {maps.input, maps.window}, {init}, {maps.output},
                            {par, par, par, par, red, red},
                            [&](OpBuilder &nb, Location l, ValueRange a) {
                              return SmallVector<Value>{nb.create<arith::AddFOp>(l, a[2], a[0])};
                            })[0];
  return dividedByCounts(b, loc, sums, g);
}

/// In a window generic, the flat index row * w + col (i64) in the unpadded
/// input plane of the element at output (i, j), window offset (a, b): row =
/// i * sh + a - ph, col = j * sw + b - pw. `rowDims` and `colDims` are the
/// loop dimensions of (i, a) and (j, b).
Value flatPlaneIndex(OpBuilder &b, Location l, const Window &g,
                     std::pair<unsigned, unsigned> rowDims, std::pair<unsigned, unsigned> colDims) {
  auto coordinate = [&](std::pair<unsigned, unsigned> dims, int64_t stride, int64_t pad) {
    Value at = b.create<arith::AddIOp>(
        l,
        b.create<arith::MulIOp>(l, b.create<linalg::IndexOp>(l, dims.first), index(b, l, stride)),
        b.create<linalg::IndexOp>(l, dims.second));
    Value unpadded = b.create<arith::SubIOp>(l, at, index(b, l, pad));
    return b.create<arith::IndexCastOp>(l, b.getI64Type(), unpadded).getResult();
  };
  Value row = coordinate(rowDims, g.sh, g.ph), col = coordinate(colDims, g.sw, g.pw);
  return b.create<arith::AddIOp>(
      l, b.create<arith::MulIOp>(l, row, b.create<arith::ConstantIntOp>(l, g.w, 64)), col);
}

/// Each output's first maximum as a flat index h * W + w into its input
/// plane (-1 if the window has no real input above minus infinity).
Value buildArgmax(OpBuilder &b, Location loc, Value x, const Window &g, Type element) {
  WindowMaps maps(b.getContext(), g);
  Value input = padded(b, loc, x, g, -std::numeric_limits<double>::infinity());
  Value maxInit = filledTensor(b, loc, g.outputShape(), element,
                               -std::numeric_limits<double>::infinity());
  Type i64 = b.getI64Type();
  Value indexEmpty = b.create<tensor::EmptyOp>(loc, g.outputShape(), i64);
  Value indexInit =
      b.create<linalg::FillOp>(loc, b.create<arith::ConstantIntOp>(loc, -1, 64).getResult(),
                               indexEmpty)
          .getResult(0);
  return buildGeneric(
      b, loc, {input, windowTensor(b, loc, g, element)}, {maps.input, maps.window},
      {maxInit, indexInit}, {maps.output, maps.output}, {par, par, par, par, red, red},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value greater = nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OGT, a[0], a[2]);
        // Row and column in the unpadded plane: i*sh + a - ph, j*sw + b - pw.
        Value flat = flatPlaneIndex(nb, l, g, {2, 4}, {3, 5});
        return SmallVector<Value>{nb.create<arith::SelectOp>(l, greater, a[0], a[2]),
                                  nb.create<arith::SelectOp>(l, greater, flat, a[3])};
      })[1];
}

/// dx[n, c, h, w] = sum over the outputs (i, j) whose windows cover (h, w)
/// of `contribution(i, j)`, in window-offset order.
Value gatherFromOutputs(
    OpBuilder &b, Location loc, const Window &g, Type element,
    function_ref<Value(OpBuilder &, Location, Value n, Value c, const CoveringOutput &)>
        contribution) {
  MLIRContext *ctx = b.getContext();
  AffineExpr n = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx),
             h = getAffineDimExpr(2, ctx), w = getAffineDimExpr(3, ctx),
             a = getAffineDimExpr(4, ctx), bb = getAffineDimExpr(5, ctx);
  AffineMap windowMap = AffineMap::get(6, 0, {a, bb}, ctx);
  AffineMap outMap = AffineMap::get(6, 0, {n, c, h, w}, ctx);
  Value zeros = filledTensor(b, loc, g.inputShape(), element, 0.0);
  Value candidates = b.create<tensor::EmptyOp>(
      loc, ArrayRef<int64_t>{coveringCandidates(g.kh, g.sh), coveringCandidates(g.kw, g.sw)},
      element);
  return buildGeneric(b, loc, {candidates}, {windowMap}, {zeros}, {outMap},
                      {par, par, par, par, red, red},
                      [&](OpBuilder &nb, Location l, ValueRange args) {
                        CoveringOutput covering = CoveringOutput::at(nb, l, g);
                        Value nIndex = nb.create<linalg::IndexOp>(l, 0);
                        Value cIndex = nb.create<linalg::IndexOp>(l, 1);
                        Value term = contribution(nb, l, nIndex, cIndex, covering);
                        Value zero = constantLike(nb, l, element, 0.0);
                        Value added = nb.create<arith::AddFOp>(
                            l, args[1], nb.create<arith::SelectOp>(l, covering.valid, term, zero));
                        return SmallVector<Value>{added};
                      })[0];
}

/// Whether the windows tile the input exactly -- stride = kernel, no
/// padding, h = oh * kh and w = ow * kw (2x2 pooling of an even plane, a
/// global average pool) -- so that each input lies in exactly one window.
bool tilesExactly(const Window &g) {
  return g.sh == g.kh && g.sw == g.kw && g.ph == 0 && g.pw == 0 && g.h == g.oh * g.kh &&
         g.w == g.ow * g.kw;
}

/// For windows that tile the input exactly: dx[n, c, i*kh + a, j*kw + b] =
/// 0 + value(i, j, a, b), as one all-parallel generic over [n, c, oh, kh,
/// ow, kw] collapsed to [n, c, h, w]. Every element is written once: no
/// zero fill first, no per-element search for covering outputs, no gathers
/// (the general form's scalar loop was 2.75% of the CNN's generated step).
/// `perOutput` are [n, c, oh, ow] tensors; `value` gets their elements at
/// (i, j). The 0 + keeps the evaluator's dx = 0, dx += term bits (-0.0
/// becomes +0.0).
Value scatterIntoWindows(OpBuilder &b, Location loc, const Window &g, Type element,
                         ValueRange perOutput,
                         function_ref<Value(OpBuilder &, Location, ValueRange)> value) {
  MLIRContext *ctx = b.getContext();
  AffineMap atOutput = AffineMap::get(6, 0,
                                      {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx),
                                       getAffineDimExpr(2, ctx), getAffineDimExpr(4, ctx)},
                                      ctx);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(6, ctx);
  Value init =
      b.create<tensor::EmptyOp>(loc, ArrayRef<int64_t>{g.n, g.c, g.oh, g.kh, g.ow, g.kw}, element);
  SmallVector<AffineMap> inputMaps(perOutput.size(), atOutput);
  Value windows =
      buildGeneric(b, loc, perOutput, inputMaps, {init}, {identity}, {par, par, par, par, par, par},
                   [&](OpBuilder &nb, Location l, ValueRange args) {
                     Value term = value(nb, l, args.drop_back());
                     return SmallVector<Value>{
                         nb.create<arith::AddFOp>(l, constantLike(nb, l, element, 0.0), term)};
                   })[0];
  SmallVector<ReassociationIndices> planes{{0}, {1}, {2, 3}, {4, 5}};
  return b.create<tensor::CollapseShapeOp>(loc, RankedTensorType::get(g.inputShape(), element),
                                           windows, planes);
}

Value buildAvgPoolGrad(OpBuilder &b, Location loc, Value dy, const Window &g, Type element) {
  Value scaled = dividedByCounts(b, loc, dy, g);
  if (tilesExactly(g))
    return scatterIntoWindows(b, loc, g, element, {scaled},
                              [](OpBuilder &, Location, ValueRange at) { return at[0]; });
  return gatherFromOutputs(b, loc, g, element,
                           [&](OpBuilder &nb, Location l, Value n, Value c,
                               const CoveringOutput &out) -> Value {
                             return nb.create<tensor::ExtractOp>(
                                 l, scaled, ValueRange{n, c, out.i, out.j});
                           });
}

Value buildMaxPoolGrad(OpBuilder &b, Location loc, Value dy, Value x, const Window &g,
                       Type element) {
  Value argmax = buildArgmax(b, loc, x, g, element);
  if (tilesExactly(g))
    return scatterIntoWindows(
        b, loc, g, element, {argmax, dy}, [&](OpBuilder &nb, Location l, ValueRange at) -> Value {
          // This element's flat index in its plane: (i*kh + a) * w + j*kw + b.
          Value here = flatPlaneIndex(nb, l, g, {2, 3}, {4, 5});
          Value isWinner = nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, at[0], here);
          return nb.create<arith::SelectOp>(l, isWinner, at[1], constantLike(nb, l, element, 0.0));
        });
  return gatherFromOutputs(
      b, loc, g, element,
      [&](OpBuilder &nb, Location l, Value n, Value c, const CoveringOutput &out) -> Value {
        Value winner = nb.create<tensor::ExtractOp>(l, argmax, ValueRange{n, c, out.i, out.j});
        Value here = nb.create<arith::AddIOp>(
            l,
            nb.create<arith::MulIOp>(l, nb.create<linalg::IndexOp>(l, 2), index(nb, l, g.w)),
            nb.create<linalg::IndexOp>(l, 3));
        Value hereI64 = nb.create<arith::IndexCastOp>(l, nb.getI64Type(), here);
        Value isWinner = nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, winner, hereI64);
        Value grad = nb.create<tensor::ExtractOp>(l, dy, ValueRange{n, c, out.i, out.j});
        return nb.create<arith::SelectOp>(l, isWinner, grad, constantLike(nb, l, element, 0.0));
      });
}

bool staticNchw(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.hasStaticShape() && type.getRank() == 4;
}

} // namespace

bool mlir::het::isPoolingGeneratedAsLinalg(Operation *op) {
  if (isa<MaxPool2dOp, AvgPool2dOp>(op))
    return staticNchw(op->getOperand(0)) && staticNchw(op->getResult(0));
  if (isa<MaxPool2dGradOp>(op))
    return staticNchw(op->getOperand(0)) && staticNchw(op->getOperand(1));
  if (isa<AvgPool2dGradOp>(op))
    return staticNchw(op->getOperand(0)) && staticNchw(op->getResult(0));
  return false;
}

FailureOr<SmallVector<Value>> mlir::het::lowerPoolingToLinalg(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  auto typeOf = [](Value v) { return cast<RankedTensorType>(v.getType()); };
  if (auto pool = dyn_cast<MaxPool2dOp>(op)) {
    Window g = Window::of(typeOf(pool.getInput()), typeOf(pool.getResult()), pool.getKernel(),
                          pool.getStrides(), pool.getPadding());
    return SmallVector<Value>{
        buildMaxPool(b, loc, pool.getInput(), g, typeOf(pool.getInput()).getElementType())};
  }
  if (auto pool = dyn_cast<AvgPool2dOp>(op)) {
    Window g = Window::of(typeOf(pool.getInput()), typeOf(pool.getResult()), pool.getKernel(),
                          pool.getStrides(), pool.getPadding());
    return SmallVector<Value>{
        buildAvgPool(b, loc, pool.getInput(), g, typeOf(pool.getInput()).getElementType())};
  }
  if (auto grad = dyn_cast<MaxPool2dGradOp>(op)) {
    Window g = Window::of(typeOf(grad.getInput()), typeOf(grad.getGradOutput()), grad.getKernel(),
                          grad.getStrides(), grad.getPadding());
    return SmallVector<Value>{buildMaxPoolGrad(b, loc, grad.getGradOutput(), grad.getInput(), g,
                                               typeOf(grad.getInput()).getElementType())};
  }
  auto grad = cast<AvgPool2dGradOp>(op);
  Window g = Window::of(typeOf(grad.getResult()), typeOf(grad.getGradOutput()), grad.getKernel(),
                        grad.getStrides(), grad.getPadding());
  return SmallVector<Value>{buildAvgPoolGrad(b, loc, grad.getGradOutput(), g,
                                             typeOf(grad.getResult()).getElementType())};
}
