//===- TileContractions.cpp - het-tile-contractions: register tiles of vectors ===//
//
// Builds the loop nest ContractionTiling.h describes in place of a
// contraction on buffers. The accumulators of a block (rows x vectors
// vector<width x f32>) are loaded once, carried through the reduction loops
// as loop-carried values (so LLVM keeps them in registers) and stored once;
// per reduction point each input is read once per block: a vector load
// where it varies along the vector dimension (contiguously: checked by
// isTilableContraction), otherwise a scalar load broadcast to the lanes.
//
// Why not linalg's tiling and vectorizer: they would give the same loops
// for matmuls, but a convolution's input index `ow + kw` is not a projected
// permutation and linalg::vectorize rejects it, and their contraction
// lowering emits fused multiply-adds, which would change every result's
// last bits against the evaluator. Written directly, one emitter covers
// every contraction HetToLinalg produces and keeps the evaluator's order.
//
// bf16 inputs (mixed precision with native bf16 products) are extended to
// f32 as they are loaded; with `bf16Dot` (a CPU with AVX512-BF16) the
// innermost reduction instead runs in pairs (k, k+1) on vdpbf16ps, which
// adds two bf16 products into each f32 lane per instruction: one input's
// two vectors at k and k+1 interleaved lane by lane, the other's two
// scalars as one 32-bit pair broadcast. An odd last k, and vectors of
// another width than 8 or 16 lanes, take the extended multiply-add. The
// pair's sum is rounded once before it joins the accumulator, so results
// differ from the f32 path in the last bits (as oneDNN's bf16 kernels do).
// MLIR 19's x86vector dialect has no bf16 dot product: the LLVM intrinsic
// is called directly (llvm.call_intrinsic on vector types).
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/ContractionTiling.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::het;

namespace {

constexpr StringLiteral kTilingAttr = "het.contraction_tiling";

/// A range of row (or column) block starts [begin, end) by `step`, each
/// block `count` rows (or made of `widths` vectors).
struct BlockRange {
  int64_t begin, end, step;
  unsigned count;                // rows
  SmallVector<unsigned> widths;  // vector widths, for column blocks
};

class NestBuilder {
public:
  NestBuilder(linalg::GenericOp op, const ContractionTiling &tiling, bool bf16Dot)
      : op(op), tiling(tiling), loc(op.getLoc()), ranges(op.getStaticLoopRanges()),
        maps(op.getIndexingMapsArray()) {
    vecDim = cast<AffineDimExpr>(maps[2].getResults().back()).getPosition();
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    for (unsigned d = 0; d < iterators.size(); ++d) {
      if (iterators[d] == utils::IteratorType::reduction)
        reductions.push_back(d);
      else if (d != vecDim && d != tiling.rowDim && !(tiling.twoRowDims() && d == tiling.rowDim2))
        otherParallel.push_back(d);
    }
    MultiplyAddBody body = matchMultiplyAddBody(op);
    mulSwapped = body.mulSwapped;
    addOutFirst = body.addOutFirst;
    inputType = cast<MemRefType>(op.getDpsInputs()[0].getType()).getElementType();
    dot = bf16Dot && inputType.isBF16();
  }

  /// `zeroed`: the output holds +0.0 everywhere (a fill just before, which
  /// the caller removes): the first pass starts its accumulators from zero
  /// vectors instead of loading them. 0.0 + p is then computed exactly as
  /// before, so the bits do not change; the memset and the loads go.
  void build(OpBuilder &b, bool zeroed) {
    unsigned block = tiling.reductionBlock;
    startFromZero = zeroed;
    if (block == 0 || reductions.empty() || block >= ranges[reductions.front()]) {
      buildTiles(b);
      return;
    }
    // Cache blocks of the outermost reduction dimension, in order; the
    // last may be shorter. The first is peeled when it starts from zero.
    int64_t size = ranges[reductions.front()], first = 0;
    if (zeroed) {
      blockBegin = constant(b, 0);
      blockEnd = constant(b, block);
      buildTiles(b);
      startFromZero = false;
      first = block;
    }
    b.create<scf::ForOp>(loc, constant(b, first), constant(b, size), constant(b, block),
                         ValueRange{}, [&](OpBuilder &nb, Location, Value start, ValueRange) {
                           blockBegin = start;
                           blockEnd = nb.create<arith::MinSIOp>(
                               loc, nb.create<arith::AddIOp>(loc, start, constant(nb, block)),
                               constant(nb, size));
                           buildTiles(nb);
                           nb.create<scf::YieldOp>(loc);
                         });
  }

private:
  void buildTiles(OpBuilder &b) {
    SmallVector<Value> dims(ranges.size(), constant(b, 0));
    if (otherParallel.empty() || tiling.othersInside) {
      buildRow2Blocks(b, dims, /*parallelOuter=*/true);
      return;
    }
    SmallVector<Value> lower, upper, steps;
    for (unsigned d : otherParallel) {
      lower.push_back(constant(b, 0));
      upper.push_back(constant(b, ranges[d]));
      steps.push_back(constant(b, 1));
    }
    b.create<scf::ParallelOp>(loc, lower, upper, steps,
                              [&](OpBuilder &nb, Location, ValueRange ivs) {
                                SmallVector<Value> inner(dims);
                                for (auto [d, iv] : llvm::zip(otherParallel, ivs))
                                  inner[d] = iv;
                                buildRow2Blocks(nb, inner, /*parallelOuter=*/false);
                              });
  }

  /// Blocks of `rows2` along the second row dimension (one block of one
  /// row without it), each holding the row and column blocks.
  void buildRow2Blocks(OpBuilder &b, SmallVector<Value> dims, bool parallelOuter) {
    if (!tiling.twoRowDims()) {
      row2Start = Value();
      row2Count = 1;
      buildBlocks(b, dims, parallelOuter);
      return;
    }
    for (const BlockRange &range : blockRanges(ranges[tiling.rowDim2], tiling.rows2)) {
      // A range of one block makes no loop: the threads split the blocks inside.
      bool oneBlock = range.end - range.begin <= range.step;
      forEachStart(b, range, parallelOuter, [&](OpBuilder &nb, Value start) {
        row2Start = start;
        row2Count = range.count;
        buildBlocks(nb, dims, parallelOuter && oneBlock);
      });
    }
  }

  Value constant(OpBuilder &b, int64_t value) {
    return b.create<arith::ConstantIndexOp>(loc, value);
  }

  /// Blocks of `rows` along a dimension of `size`, then one tail block.
  static SmallVector<BlockRange> blockRanges(int64_t size, unsigned rows) {
    int64_t main = size / rows * rows;
    SmallVector<BlockRange> result;
    if (main > 0)
      result.push_back({0, main, rows, rows, {}});
    if (main < size)
      result.push_back({main, main + 1, 1, unsigned(size - main), {}});
    return result;
  }

  SmallVector<BlockRange> rowRanges() const {
    return blockRanges(ranges[tiling.rowDim], tiling.rows);
  }

  SmallVector<BlockRange> columnRanges() const {
    int64_t size = ranges[vecDim], block = int64_t(tiling.width) * tiling.vectors;
    int64_t main = size / block * block;
    SmallVector<BlockRange> result;
    if (main > 0)
      result.push_back(
          {0, main, block, 0, SmallVector<unsigned>(tiling.vectors, tiling.width)});
    if (main < size) {
      // The tail: whole vectors, then one narrower.
      SmallVector<unsigned> widths;
      int64_t left = size - main;
      for (; left >= tiling.width; left -= tiling.width)
        widths.push_back(tiling.width);
      if (left > 0)
        widths.push_back(unsigned(left));
      result.push_back({main, main + 1, 1, 0, widths});
    }
    return result;
  }

  /// Calls `body` for each start in `range`: a loop, or once for a single block.
  void forEachStart(OpBuilder &b, const BlockRange &range, bool parallel,
                    function_ref<void(OpBuilder &, Value)> body) {
    if (range.end - range.begin <= range.step) {
      body(b, constant(b, range.begin));
      return;
    }
    Value lower = constant(b, range.begin), upper = constant(b, range.end),
          step = constant(b, range.step);
    if (parallel) {
      b.create<scf::ParallelOp>(loc, ValueRange{lower}, ValueRange{upper}, ValueRange{step},
                                [&](OpBuilder &nb, Location, ValueRange ivs) { body(nb, ivs[0]); });
      return;
    }
    b.create<scf::ForOp>(loc, lower, upper, step, ValueRange{},
                         [&](OpBuilder &nb, Location, Value iv, ValueRange) {
                           body(nb, iv);
                           nb.create<scf::YieldOp>(loc);
                         });
  }

  void buildBlocks(OpBuilder &b, SmallVector<Value> dims, bool parallelOuter) {
    SmallVector<BlockRange> rowsR = rowRanges(), colsR = columnRanges();
    bool rowsOutside = tiling.rowsOutside;
    const SmallVector<BlockRange> &outer = rowsOutside ? rowsR : colsR;
    const SmallVector<BlockRange> &inner = rowsOutside ? colsR : rowsR;
    for (const BlockRange &o : outer) {
      forEachStart(b, o, parallelOuter, [&](OpBuilder &ob, Value outerStart) {
        for (const BlockRange &i : inner) {
          forEachStart(ob, i, false, [&](OpBuilder &ib, Value innerStart) {
            const BlockRange &rowRange = rowsOutside ? o : i;
            const BlockRange &colRange = rowsOutside ? i : o;
            Value row0 = rowsOutside ? outerStart : innerStart;
            Value col0 = rowsOutside ? innerStart : outerStart;
            forEachOther(ib, dims, 0, [&](OpBuilder &tb, SmallVector<Value> at) {
              buildBlock(tb, at, row0, rowRange.count, col0, colRange.widths);
            });
          });
        }
      });
    }
  }

  /// With othersInside, loops over the other parallel dimensions around each
  /// register block (so consecutive blocks reuse the same rows of the inputs,
  /// in the L1 cache: a filter gradient's taps); otherwise they are outside
  /// (buildTiles) and `body` runs once.
  void forEachOther(OpBuilder &b, SmallVector<Value> dims, unsigned level,
                    function_ref<void(OpBuilder &, SmallVector<Value>)> body) {
    if (!tiling.othersInside || level == otherParallel.size()) {
      body(b, dims);
      return;
    }
    unsigned d = otherParallel[level];
    b.create<scf::ForOp>(loc, constant(b, 0), constant(b, ranges[d]), constant(b, 1), ValueRange{},
                         [&](OpBuilder &nb, Location, Value iv, ValueRange) {
                           SmallVector<Value> inner(dims);
                           inner[d] = iv;
                           forEachOther(nb, inner, level + 1, body);
                           nb.create<scf::YieldOp>(loc);
                         });
  }

  /// Indices of `map` at the iteration point `dims`.
  SmallVector<Value> indices(OpBuilder &b, AffineMap map, ArrayRef<Value> dims) {
    SmallVector<Value> result;
    for (AffineExpr e : map.getResults()) {
      if (auto dim = dyn_cast<AffineDimExpr>(e))
        result.push_back(dims[dim.getPosition()]);
      else if (auto c = dyn_cast<AffineConstantExpr>(e))
        result.push_back(constant(b, c.getValue()));
      else
        result.push_back(b.create<affine::AffineApplyOp>(
            loc, AffineMap::get(map.getNumDims(), 0, e), dims));
    }
    return result;
  }

  /// One register block: rows x widths.size() accumulators.
  void buildBlock(OpBuilder &b, SmallVector<Value> dims, Value row0, unsigned rows, Value col0,
                  ArrayRef<unsigned> widths) {
    Type f32 = b.getF32Type();
    SmallVector<Value> rowIndex, row2Index, colIndex;
    for (unsigned i = 0; i < rows; ++i)
      rowIndex.push_back(i == 0 ? row0 : b.create<arith::AddIOp>(loc, row0, constant(b, i)));
    for (unsigned k = 0; k < row2Count; ++k)
      row2Index.push_back(!row2Start ? Value()
                          : k == 0   ? row2Start
                                     : b.create<arith::AddIOp>(loc, row2Start, constant(b, k)));
    unsigned offset = 0;
    for (unsigned w : widths) {
      colIndex.push_back(offset == 0 ? col0
                                     : b.create<arith::AddIOp>(loc, col0, constant(b, offset)));
      offset += w;
    }
    Value out = op.getDpsInits()[0];
    // Accumulator (i, k, j) of rows x rows2 x vectors, at position
    // (i * rows2 + k) * vectors + j.
    auto at = [&](unsigned i, unsigned k, unsigned j) {
      SmallVector<Value> point(dims);
      point[tiling.rowDim] = rowIndex[i];
      if (row2Start)
        point[tiling.rowDim2] = row2Index[k];
      point[vecDim] = colIndex[j];
      return point;
    };
    SmallVector<Value> accumulators;
    for (unsigned i = 0; i < rows; ++i) {
      for (unsigned k = 0; k < row2Count; ++k) {
        for (unsigned j = 0; j < widths.size(); ++j) {
          auto type = VectorType::get({widths[j]}, f32);
          if (startFromZero)
            accumulators.push_back(b.create<arith::ConstantOp>(
                loc, type, DenseElementsAttr::get(type, b.getF32FloatAttr(0.0f))));
          else
            accumulators.push_back(
                b.create<vector::LoadOp>(loc, type, out, indices(b, maps[2], at(i, k, j))));
        }
      }
    }
    SmallVector<Value> sums =
        buildReductions(b, dims, 0, accumulators, rowIndex, row2Index, colIndex, widths);
    unsigned position = 0;
    for (unsigned i = 0; i < rows; ++i)
      for (unsigned k = 0; k < row2Count; ++k)
        for (unsigned j = 0; j < widths.size(); ++j)
          b.create<vector::StoreOp>(loc, sums[position++], out, indices(b, maps[2], at(i, k, j)));
  }

  /// The reduction loops, outermost first (the evaluator's order), carrying
  /// the accumulators.
  SmallVector<Value> buildReductions(OpBuilder &b, SmallVector<Value> dims, unsigned level,
                                     ValueRange accumulators, ArrayRef<Value> rowIndex,
                                     ArrayRef<Value> row2Index, ArrayRef<Value> colIndex,
                                     ArrayRef<unsigned> widths) {
    if (level == reductions.size())
      return multiplyAdd(b, dims, accumulators, rowIndex, row2Index, colIndex, widths);
    unsigned d = reductions[level];
    // The outermost reduction runs over the current cache block, if any.
    bool blocked = level == 0 && blockBegin;
    Value lower = blocked ? blockBegin : constant(b, 0);
    Value upper = blocked ? blockEnd : constant(b, ranges[d]);
    auto loop = [&](Value from, Value to, int64_t step, bool paired, ValueRange carried) {
      auto forOp = b.create<scf::ForOp>(
          loc, from, to, constant(b, step), carried,
          [&](OpBuilder &nb, Location, Value iv, ValueRange inside) {
            SmallVector<Value> inner(dims);
            inner[d] = iv;
            nb.create<scf::YieldOp>(
                loc, paired ? multiplyAdd(nb, inner, inside, rowIndex, row2Index, colIndex, widths,
                                          /*pairDim=*/d)
                            : buildReductions(nb, inner, level + 1, inside, rowIndex, row2Index,
                                              colIndex, widths));
          });
      return SmallVector<Value>(forOp.getResults());
    };
    if (!dot || level + 1 != reductions.size() || (!blocked && ranges[d] < 2))
      return loop(lower, upper, 1, /*paired=*/false, accumulators);
    // The innermost reduction in pairs on the dot product, then its odd
    // last point alone.
    if (!blocked) {
      int64_t pairs = ranges[d] / 2 * 2;
      SmallVector<Value> sums = loop(lower, constant(b, pairs), 2, /*paired=*/true, accumulators);
      if (pairs == ranges[d])
        return sums;
      SmallVector<Value> last(dims);
      last[d] = constant(b, pairs);
      return multiplyAdd(b, last, sums, rowIndex, row2Index, colIndex, widths);
    }
    Value count = b.create<arith::SubIOp>(loc, upper, lower);
    Value pairsEnd = b.create<arith::AddIOp>(
        loc, lower,
        b.create<arith::MulIOp>(loc, b.create<arith::DivUIOp>(loc, count, constant(b, 2)),
                                constant(b, 2)));
    SmallVector<Value> sums = loop(lower, pairsEnd, 2, /*paired=*/true, accumulators);
    Value odd = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, pairsEnd, upper);
    auto ifOp = b.create<scf::IfOp>(
        loc, odd,
        [&](OpBuilder &tb, Location) {
          SmallVector<Value> last(dims);
          last[d] = pairsEnd;
          tb.create<scf::YieldOp>(
              loc, multiplyAdd(tb, last, sums, rowIndex, row2Index, colIndex, widths));
        },
        [&](OpBuilder &eb, Location) { eb.create<scf::YieldOp>(loc, sums); });
    return SmallVector<Value>(ifOp.getResults());
  }

  /// Adds the products at the reduction point `dims` into `accumulators`;
  /// with `pairDim`, those at `dims` and at the next point along it (the
  /// dot product's pairs, or two multiply-adds where a vector's width has
  /// no dot product).
  SmallVector<Value> multiplyAdd(OpBuilder &b, SmallVector<Value> dims, ValueRange accumulators,
                                 ArrayRef<Value> rowIndex, ArrayRef<Value> row2Index,
                                 ArrayRef<Value> colIndex, ArrayRef<unsigned> widths,
                                 std::optional<unsigned> pairDim = std::nullopt) {
    Type f32 = b.getF32Type();
    SmallVector<Value> next;
    if (pairDim) {
      next = dims;
      next[*pairDim] = b.create<arith::AddIOp>(loc, dims[*pairDim], constant(b, 1));
    }
    // Where an input is read at reduction point `at` for block element
    // (i, k, j), and whether it varies along the vector dimension.
    struct Read {
      SmallVector<Value> at;
      bool byVector;
      unsigned row, row2;
    };
    auto where = [&](ArrayRef<Value> point, unsigned n, unsigned i, unsigned k, unsigned j) {
      AffineMap map = maps[n];
      bool byRow = map.isFunctionOfDim(tiling.rowDim), byVector = map.isFunctionOfDim(vecDim);
      bool byRow2 = row2Start && map.isFunctionOfDim(tiling.rowDim2);
      Read read{SmallVector<Value>(point), byVector, byRow ? i : 0, byRow2 ? k : 0};
      read.at[tiling.rowDim] = rowIndex[read.row];
      if (byRow2)
        read.at[tiling.rowDim2] = row2Index[read.row2];
      read.at[vecDim] = colIndex[byVector ? j : 0];
      return read;
    };
    // Each input's value for block element (i, k, j) at each point, read
    // once: keyed by the point (0: dims, 1: next), the row and the second
    // row where it depends on them, and the vector (or its width, for a
    // broadcast scalar).
    using Key = std::tuple<unsigned, unsigned, unsigned, unsigned, unsigned, bool>;
    std::map<Key, Value> values, pairs;
    std::map<std::tuple<unsigned, unsigned, unsigned, unsigned>, Value> scalars;
    auto scalar = [&](unsigned point, unsigned n, const Read &read) {
      Value &value = scalars[{point, n, read.row, read.row2}];
      if (!value)
        value = b.create<memref::LoadOp>(loc, op.getDpsInputs()[n], indices(b, maps[n], read.at));
      return value;
    };
    // f32 lanes, extended from bf16/f16 inputs (exact).
    auto input = [&](unsigned point, unsigned n, unsigned i, unsigned k, unsigned j) -> Value {
      Read read = where(point ? next : dims, n, i, k, j);
      unsigned key = read.byVector ? j : widths[j];
      Value &value = values[{point, n, read.row, read.row2, key, read.byVector}];
      if (value)
        return value;
      auto type = VectorType::get({widths[j]}, f32);
      if (read.byVector) {
        value = b.create<vector::LoadOp>(loc, type.clone(inputType), op.getDpsInputs()[n],
                                         indices(b, maps[n], read.at));
        if (inputType != f32)
          value = b.create<arith::ExtFOp>(loc, type, value);
      } else {
        Value element = scalar(point, n, read);
        if (inputType != f32)
          element = b.create<arith::ExtFOp>(loc, f32, element);
        value = b.create<vector::BroadcastOp>(loc, type, element);
      }
      return value;
    };
    // The dot product's operand: 2 x width bf16 lanes, the values at
    // `dims` and `next` alternating.
    Type i16 = b.getI16Type(), i32 = b.getI32Type();
    auto pairInput = [&](unsigned n, unsigned i, unsigned k, unsigned j) -> Value {
      Read read0 = where(dims, n, i, k, j), read1 = where(next, n, i, k, j);
      unsigned width = widths[j], key = read0.byVector ? j : width;
      Value &value = pairs[{0, n, read0.row, read0.row2, key, read0.byVector}];
      if (value)
        return value;
      auto lanes = VectorType::get({width}, i16);
      auto result = VectorType::get({2 * width}, inputType);
      if (read0.byVector) {
        auto load = [&](const Read &read) -> Value {
          Value v = b.create<vector::LoadOp>(loc, lanes.clone(inputType), op.getDpsInputs()[n],
                                             indices(b, maps[n], read.at));
          return b.create<vector::BitCastOp>(loc, lanes, v);
        };
        SmallVector<int64_t> interleave;
        for (unsigned lane = 0; lane < width; ++lane)
          interleave.append({lane, width + lane});
        Value at0 = load(read0), at1 = load(read1);
        Value both = b.create<vector::ShuffleOp>(loc, at0, at1, interleave);
        value = b.create<vector::BitCastOp>(loc, result, both);
      } else {
        // The two scalars as one 32-bit lane, broadcast.
        auto pairType = VectorType::get({2}, i16);
        Value pair = b.create<arith::ConstantOp>(
            loc, pairType, DenseElementsAttr::get(pairType, b.getI16IntegerAttr(0)));
        for (auto [slot, read] : llvm::enumerate(std::array<const Read *, 2>{&read0, &read1})) {
          Value bits = b.create<arith::BitcastOp>(loc, i16, scalar(slot, n, *read));
          pair = b.create<vector::InsertOp>(loc, bits, pair, int64_t(slot));
        }
        Value word = b.create<vector::ExtractOp>(
            loc, b.create<vector::BitCastOp>(loc, VectorType::get({1}, i32), pair), int64_t(0));
        Value words = b.create<vector::BroadcastOp>(loc, VectorType::get({width}, i32), word);
        value = b.create<vector::BitCastOp>(loc, result, words);
      }
      return value;
    };
    auto multiplyAddAt = [&](unsigned point, unsigned i, unsigned k, unsigned j, Value acc) {
      Value a = input(point, 0, i, k, j), c = input(point, 1, i, k, j);
      Value product =
          mulSwapped ? b.create<arith::MulFOp>(loc, c, a) : b.create<arith::MulFOp>(loc, a, c);
      return addOutFirst ? b.create<arith::AddFOp>(loc, acc, product).getResult()
                         : b.create<arith::AddFOp>(loc, product, acc).getResult();
    };
    SmallVector<Value> sums;
    unsigned columns = widths.size(), rows2 = row2Index.size();
    for (unsigned i = 0; i < accumulators.size() / (columns * rows2); ++i) {
      for (unsigned k = 0; k < rows2; ++k) {
        for (unsigned j = 0; j < columns; ++j) {
          Value acc = accumulators[sums.size()];
          if (!pairDim) {
            sums.push_back(multiplyAddAt(0, i, k, j, acc));
          } else if (widths[j] == 16 || widths[j] == 8) {
            StringRef intrinsic = widths[j] == 16 ? "llvm.x86.avx512bf16.dpbf16ps.512"
                                                  : "llvm.x86.avx512bf16.dpbf16ps.256";
            Value a = pairInput(0, i, k, j), c = pairInput(1, i, k, j);
            sums.push_back(b.create<LLVM::CallIntrinsicOp>(loc, acc.getType(),
                                                           b.getStringAttr(intrinsic),
                                                           ValueRange{acc, a, c})
                               .getResult(0));
          } else {
            sums.push_back(multiplyAddAt(1, i, k, j, multiplyAddAt(0, i, k, j, acc)));
          }
        }
      }
    }
    return sums;
  }

  linalg::GenericOp op;
  ContractionTiling tiling;
  Location loc;
  SmallVector<int64_t> ranges;
  SmallVector<AffineMap> maps;
  unsigned vecDim = 0;
  SmallVector<unsigned> reductions, otherParallel;
  bool mulSwapped = false, addOutFirst = true;
  Type inputType;   // f32, or bf16/f16 extended to the f32 accumulators
  bool dot = false; // bf16 pairs on the AVX512-BF16 dot product
  Value blockBegin, blockEnd; // the current cache block of reductions.front(), if blocked
  bool startFromZero = false; // accumulators start at +0.0 instead of the output's values
  Value row2Start;            // the current block of the second row dimension, if any
  unsigned row2Count = 1;     // its rows
};

struct TileContractionsPass
    : public PassWrapper<TileContractionsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TileContractionsPass)

  TileContractionsPass() = default;
  TileContractionsPass(const TileContractionsPass &other) : PassWrapper(other) {
    lookup = other.lookup;
    everywhere = other.everywhere;
  }
  TileContractionsPass(ContractionTilingLookup lookup, std::optional<ContractionTiling> everywhere,
                       bool dotProduct)
      : lookup(std::move(lookup)), everywhere(everywhere) {
    bf16Dot = dotProduct;
  }

  StringRef getArgument() const override { return "het-tile-contractions"; }
  StringRef getDescription() const override {
    return "Replace generated contractions (library=mlir, on buffers) by register-tiled, "
           "vectorized loop nests; the tiling comes from the tuning database, a "
           "het.contraction_tiling attribute or the tiling option";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect, LLVM::LLVMDialect,
                    memref::MemRefDialect, scf::SCFDialect, vector::VectorDialect>();
  }

  LogicalResult initialize(MLIRContext *) override {
    if (!tilingOption.empty()) {
      everywhere = ContractionTiling::parse(tilingOption);
      if (!everywhere)
        return emitError(UnknownLoc::get(&getContext()))
               << "het-tile-contractions: tiling '" << tilingOption
               << "' is not 'row=d<N> rows=<N> width=<N> vectors=<N> order=rows|columns "
                  "[row2=d<N> rows2=<N>] [others=inside] [rblock=<N>]'";
    }
    return success();
  }

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> contractions;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isTilableContraction(op))
        contractions.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : contractions) {
      std::optional<ContractionTiling> tiling;
      bool fromAttribute = false;
      if (auto text = op->getAttrOfType<StringAttr>(kTilingAttr)) {
        fromAttribute = true;
        tiling = ContractionTiling::parse(text.getValue());
        if (!tiling) {
          op.emitError()
              << "het.contraction_tiling '" << text.getValue()
              << "' is not 'row=d<N> rows=<N> width=<N> vectors=<N> "
                 "order=rows|columns [row2=d<N> rows2=<N>] [others=inside] [rblock=<N>]'";
          return signalPassFailure();
        }
      } else if (lookup) {
        tiling = lookup(contractionSignature(op));
      }
      if (!tiling && everywhere) {
        // One tiling for all: it applies where it fits.
        if (failed(verifyTiling(op, *everywhere)))
          continue;
        tiling = everywhere;
      }
      if (!tiling)
        continue;
      std::string why;
      if (failed(verifyTiling(op, *tiling, &why))) {
        if (fromAttribute) {
          op.emitError() << "tiling '" << tiling->str() << "' does not fit this contraction: "
                         << why;
          return signalPassFailure();
        }
        // A record naming a dimension this signature has not got (a damaged
        // or hand-edited database): the loops stay untiled.
        op.emitWarning() << "tiling '" << tiling->str()
                         << "' does not fit this contraction, left untiled: " << why;
        continue;
      }
      if (failed(tileContraction(rewriter, op, *tiling, bf16Dot)))
        return signalPassFailure();
    }
  }

  Option<std::string> tilingOption{
      *this, "tiling",
      llvm::cl::desc(
          "tile every tilable contraction so: 'row=d<N> rows=<N> width=<N> "
          "vectors=<N> order=rows|columns [row2=d<N> rows2=<N>] [others=inside] [rblock=<N>]'")};
  Option<bool> bf16Dot{*this, "bf16-dot",
                       llvm::cl::desc("run bf16 contractions' innermost reduction in pairs on "
                                      "the AVX512-BF16 dot product (the target must have it)"),
                       llvm::cl::init(false)};
  ContractionTilingLookup lookup;
  std::optional<ContractionTiling> everywhere;
};

} // namespace

LogicalResult mlir::het::tileContraction(RewriterBase &rewriter, linalg::GenericOp op,
                                         const ContractionTiling &tiling, bool bf16Dot) {
  std::string why;
  if (!isTilableContraction(op, &why))
    return op.emitError() << "cannot tile this contraction: " << why;
  if (failed(verifyTiling(op, tiling, &why)))
    return op.emitError() << "tiling '" << tiling.str() << "' does not fit: " << why;
  // A fill of +0.0 of the very output just before (how HetToLinalg
  // initializes every contraction): the accumulators start from zero
  // vectors and the fill goes. Nothing runs between them, and the tiles
  // write every output element.
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  bool zeroed = false;
  if (fill && fill.getOutputs().size() == 1 && fill.getOutputs()[0] == op.getDpsInits()[0]) {
    FloatAttr value;
    zeroed = matchPattern(fill.getInputs()[0], m_Constant(&value)) && value.getValue().isPosZero();
  }
  rewriter.setInsertionPoint(op);
  NestBuilder(op, tiling, bf16Dot).build(rewriter, zeroed);
  rewriter.eraseOp(op);
  if (zeroed)
    rewriter.eraseOp(fill);
  return success();
}

std::unique_ptr<Pass> mlir::het::createTileContractionsPass(
    ContractionTilingLookup lookup, std::optional<ContractionTiling> everywhere, bool bf16Dot) {
  return std::make_unique<TileContractionsPass>(std::move(lookup), everywhere, bf16Dot);
}

void mlir::het::registerTileContractionsPass() { PassRegistration<TileContractionsPass>(); }
