//===- LayoutToLinalg.cpp - concat, slice, slice_grad, reduce_max ---------===//
//
// Concatenation and slicing become tensor.insert_slice / extract_slice on
// static shapes (bufferization turns them into copies into one buffer);
// the maximum reduction is a linalg.generic like the sums, starting from
// -inf and propagating NaN (arith.maximumf), as torch.amax does.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"
#include "Lowering.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using namespace mlir::het;
using namespace mlir::het::lowering;

namespace {

RankedTensorType rankedOf(Value value) { return cast<RankedTensorType>(value.getType()); }

int64_t normalized(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// Offsets and strides of a strided slice: `starts`/`steps` along `axes`,
/// 0/1 along the others.
void sliceGeometry(int64_t rank, ArrayRef<int64_t> axes, ArrayRef<int64_t> starts,
                   ArrayRef<int64_t> steps, SmallVectorImpl<int64_t> &offsets,
                   SmallVectorImpl<int64_t> &strides) {
  offsets.assign(rank, 0);
  strides.assign(rank, 1);
  for (auto [axis, start, step] : llvm::zip(axes, starts, steps)) {
    offsets[normalized(axis, rank)] = start;
    strides[normalized(axis, rank)] = step;
  }
}

bool isStatic(Operation *op) {
  auto fixed = [](Type type) { return cast<RankedTensorType>(type).hasStaticShape(); };
  return llvm::all_of(op->getOperandTypes(), fixed) && llvm::all_of(op->getResultTypes(), fixed);
}

} // namespace

bool mlir::het::isLayoutLoweredToLinalg(Operation *op) {
  return isa<ConcatOp, SliceOp, SliceGradOp, ReduceMaxOp>(op);
}

FailureOr<SmallVector<Value>> mlir::het::lowerLayoutToLinalg(OpBuilder &b, Operation *op) {
  if (!isStatic(op))
    return op->emitOpError("needs static shapes to be lowered");
  Location loc = op->getLoc();
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = result.getRank();
  SmallVector<OpFoldResult> sizes, offsets, strides;
  auto attrs = [&](ArrayRef<int64_t> values) {
    return SmallVector<OpFoldResult>(llvm::map_range(
        values, [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); }));
  };
  return llvm::TypeSwitch<Operation *, FailureOr<SmallVector<Value>>>(op)
      .Case([&](ConcatOp o) -> FailureOr<SmallVector<Value>> {
        int64_t axis = normalized(o.getAxis(), rank);
        Value joined = b.create<tensor::EmptyOp>(loc, result.getShape(), result.getElementType());
        int64_t offset = 0;
        for (Value input : o.getInputs()) {
          SmallVector<int64_t> at(rank, 0), ones(rank, 1);
          at[axis] = offset;
          joined = b.create<tensor::InsertSliceOp>(loc, input, joined, attrs(at),
                                                   attrs(rankedOf(input).getShape()), attrs(ones));
          offset += rankedOf(input).getDimSize(axis);
        }
        return SmallVector<Value>{joined};
      })
      .Case([&](SliceOp o) -> FailureOr<SmallVector<Value>> {
        SmallVector<int64_t> at, by;
        sliceGeometry(rank, o.getAxes(), o.getStarts(), o.getSteps(), at, by);
        Value taken = b.create<tensor::ExtractSliceOp>(loc, result, o.getInput(), attrs(at),
                                                       attrs(result.getShape()), attrs(by));
        return SmallVector<Value>{taken};
      })
      .Case([&](SliceGradOp o) -> FailureOr<SmallVector<Value>> {
        SmallVector<int64_t> at, by;
        sliceGeometry(rank, o.getAxes(), o.getStarts(), o.getSteps(), at, by);
        Value zeros = filledTensor(b, loc, result.getShape(), result.getElementType(), 0.0);
        Value placed = b.create<tensor::InsertSliceOp>(
            loc, o.getGradOutput(), zeros, attrs(at),
            attrs(rankedOf(o.getGradOutput()).getShape()), attrs(by));
        return SmallVector<Value>{placed};
      })
      .Case([&](ReduceMaxOp o) -> FailureOr<SmallVector<Value>> {
        SmallVector<int64_t> dropped;
        if (!o.getKeepDims())
          for (int64_t axis : o.getAxes())
            dropped.push_back(normalized(axis, rankedOf(o.getInput()).getRank()));
        Value peak = buildReduction(
            b, loc, o.getInput(), result, dropped, -std::numeric_limits<double>::infinity(),
            [](OpBuilder &nb, Location l, Value accumulated, Value element) {
              return nb.create<arith::MaximumFOp>(l, accumulated, element).getResult();
            });
        return SmallVector<Value>{peak};
      })
      .Default([&](Operation *) -> FailureOr<SmallVector<Value>> {
        return op->emitOpError("is not a layout op");
      });
}
