//===- DropoutToLinalg.cpp - het.dropout's Philox draws as generated code --===//
//
// library=mlir (and so GPU builds): het.dropout as one linalg.generic that
// draws each element's Philox4x32-10 number itself -- the generator of
// lib/Eval/Philox.h, bit for bit: ten rounds of two 32x32->64-bit products
// over the counter (element index in the step's batch, step), keyed by
// (the seed's two halves xor-ed, stream) -- keeps the element (scaled by
// 1/(1-p)) when the top 24 bits of the first word, as a uniform in [0, 1),
// are >= p. Elements are independent, so each is one thread on a GPU.
//
// The step and where this rank's samples start in the step's batch are the
// runtime's (a pipeline rank holds a slice of every micro-batch): two host
// calls per op, hetrt_random_step and hetrt_random_first_sample
// (lib/Runtime/RandomState.cpp), read before the kernel runs.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"
#include "Lowering.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::het;

namespace {

/// A runtime counter (i64, no arguments) read on the host.
Value runtimeCounter(OpBuilder &b, Location loc, Operation *op, StringRef name) {
  auto module = op->getParentOfType<ModuleOp>();
  declareRuntimeFunction(module, name, b.getFunctionType({}, {b.getI64Type()}));
  return b.create<func::CallOp>(loc, name, TypeRange{b.getI64Type()}, ValueRange{}).getResult(0);
}

/// Philox4x32-10 of `counter` under `key` (i32 values), as Philox.h.
std::array<Value, 4> philox(OpBuilder &b, Location loc, std::array<Value, 4> counter,
                            std::array<Value, 2> key) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto constant32 = [&](uint32_t v) {
    return b.create<arith::ConstantOp>(loc, b.getI32IntegerAttr(int32_t(v))).getResult();
  };
  Value multiplier0 = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(0xD2511F53u));
  Value multiplier1 = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(0xCD9E8D57u));
  Value weyl0 = constant32(0x9E3779B9u), weyl1 = constant32(0xBB67AE85u);
  Value shift = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(32));
  for (int round = 0; round < 10; ++round) {
    Value product0 = b.create<arith::MulIOp>(
        loc, multiplier0, b.create<arith::ExtUIOp>(loc, i64, counter[0]));
    Value product1 = b.create<arith::MulIOp>(
        loc, multiplier1, b.create<arith::ExtUIOp>(loc, i64, counter[2]));
    auto high = [&](Value product) {
      return b.create<arith::TruncIOp>(loc, i32, b.create<arith::ShRUIOp>(loc, product, shift))
          .getResult();
    };
    auto low = [&](Value product) {
      return b.create<arith::TruncIOp>(loc, i32, product).getResult();
    };
    Value word0 = b.create<arith::XOrIOp>(
        loc, b.create<arith::XOrIOp>(loc, high(product1), counter[1]), key[0]);
    Value word2 = b.create<arith::XOrIOp>(
        loc, b.create<arith::XOrIOp>(loc, high(product0), counter[3]), key[1]);
    counter = {word0, low(product1), word2, low(product0)};
    key[0] = b.create<arith::AddIOp>(loc, key[0], weyl0);
    key[1] = b.create<arith::AddIOp>(loc, key[1], weyl1);
  }
  return counter;
}

} // namespace

bool mlir::het::isDropoutGeneratedAsLinalg(Operation *op) {
  auto dropout = dyn_cast<DropoutOp>(op);
  if (!dropout)
    return false;
  auto type = dyn_cast<RankedTensorType>(dropout.getInput().getType());
  return type && type.hasStaticShape() && type.getElementType().isF32();
}

FailureOr<SmallVector<Value>> mlir::het::lowerDropoutToLinalg(OpBuilder &b, Operation *op) {
  auto dropout = cast<DropoutOp>(op);
  Location loc = op->getLoc();
  auto type = cast<RankedTensorType>(dropout.getInput().getType());
  int64_t rank = type.getRank();
  ArrayRef<int64_t> shape = type.getShape();
  int64_t size = type.getNumElements();
  // As the evaluator: a sample is a row of the first dimension.
  int64_t perSample = rank == 0 || shape[0] == 0 ? 1 : size / shape[0];
  double p = dropout.getP().convertToDouble();
  uint64_t seed = uint64_t(dropout.getSeed());
  Type i32 = b.getI32Type(), i64 = b.getI64Type();

  Value step = runtimeCounter(b, loc, op, "hetrt_random_step");
  Value firstSample = runtimeCounter(b, loc, op, "hetrt_random_first_sample");
  Value first = b.create<arith::MulIOp>(
      loc, firstSample, b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(perSample)));
  Value init = b.create<tensor::EmptyOp>(loc, shape, type.getElementType());
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{type}, ValueRange{dropout.getInput()}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        // The element's index in the rank's part of the step's batch.
        Value index = nb.create<arith::ConstantOp>(l, nb.getI64IntegerAttr(0));
        for (int64_t d = 0; d < rank; ++d) {
          Value extent = nb.create<arith::ConstantOp>(l, nb.getI64IntegerAttr(shape[d]));
          Value position = nb.create<arith::IndexCastOp>(
              l, i64, nb.create<linalg::IndexOp>(l, d));
          index = nb.create<arith::AddIOp>(l, nb.create<arith::MulIOp>(l, index, extent),
                                           position);
        }
        index = nb.create<arith::AddIOp>(l, index, first);
        Value thirtyTwo = nb.create<arith::ConstantOp>(l, nb.getI64IntegerAttr(32));
        auto low = [&](Value v) { return nb.create<arith::TruncIOp>(l, i32, v).getResult(); };
        auto high = [&](Value v) {
          return nb.create<arith::TruncIOp>(l, i32, nb.create<arith::ShRUIOp>(l, v, thirtyTwo))
              .getResult();
        };
        Value key0 = nb.create<arith::ConstantOp>(
            l, nb.getI32IntegerAttr(int32_t(uint32_t(seed) ^ uint32_t(seed >> 32))));
        Value key1 = nb.create<arith::ConstantOp>(
            l, nb.getI32IntegerAttr(int32_t(uint32_t(uint64_t(dropout.getStream())))));
        std::array<Value, 4> words =
            philox(nb, l, {low(index), high(index), low(step), high(step)}, {key0, key1});
        // uniform = (word0 >> 8) * 2^-24, in double as Philox.h.
        Value top = nb.create<arith::ShRUIOp>(
            l, words[0], nb.create<arith::ConstantOp>(l, nb.getI32IntegerAttr(8)));
        Value uniform = nb.create<arith::MulFOp>(
            l, nb.create<arith::UIToFPOp>(l, nb.getF64Type(), top),
            nb.create<arith::ConstantOp>(l, nb.getF64FloatAttr(1.0 / 16777216.0)));
        Value keep = nb.create<arith::CmpFOp>(
            l, arith::CmpFPredicate::OGE, uniform,
            nb.create<arith::ConstantOp>(l, nb.getF64FloatAttr(p)));
        Value scale = nb.create<arith::ConstantOp>(
            l, nb.getF32FloatAttr(float(1.0 / (1.0 - p))));
        Value zero = nb.create<arith::ConstantOp>(l, nb.getF32FloatAttr(0.0f));
        Value scaled = nb.create<arith::MulFOp>(l, args[0], scale);
        nb.create<linalg::YieldOp>(l, ValueRange{
                                          nb.create<arith::SelectOp>(l, keep, scaled, zero)});
      });
  return SmallVector<Value>{generic.getResult(0)};
}
