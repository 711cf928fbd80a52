//===- ContractionMatch.cpp - which contractions can be tiled, their keys and candidates ===//
//
// The half of het-tile-contractions that decides without rewriting: whether
// a linalg.generic is a contraction the tiler handles, the signature its
// tuning records are keyed by, the candidate tilings het-tune times and the
// (de)serialization of a tiling. The loop nest itself is built in
// TileContractions.cpp.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/ContractionTiling.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::het;

std::string ContractionTiling::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "row=d" << rowDim << " rows=" << rows << " width=" << width << " vectors=" << vectors
     << " order=" << (rowsOutside ? "rows" : "columns");
  if (twoRowDims())
    os << " row2=d" << rowDim2 << " rows2=" << rows2;
  if (othersInside)
    os << " others=inside";
  if (reductionBlock)
    os << " rblock=" << reductionBlock;
  return text;
}

std::optional<ContractionTiling> ContractionTiling::parse(llvm::StringRef text) {
  ContractionTiling tiling;
  llvm::SmallVector<llvm::StringRef> fields;
  text.trim().split(fields, ' ', -1, /*KeepEmpty=*/false);
  if (fields.size() < 5 || fields.size() > 9)
    return std::nullopt;
  auto number = [](llvm::StringRef field, llvm::StringRef name, unsigned &value) {
    return field.consume_front(name) && !field.getAsInteger(10, value);
  };
  if (!number(fields[0], "row=d", tiling.rowDim) || !number(fields[1], "rows=", tiling.rows) ||
      !number(fields[2], "width=", tiling.width) ||
      !number(fields[3], "vectors=", tiling.vectors))
    return std::nullopt;
  if (fields[4] == "order=rows")
    tiling.rowsOutside = true;
  else if (fields[4] == "order=columns")
    tiling.rowsOutside = false;
  else
    return std::nullopt;
  // Optional fields, in str()'s order: row2=dN rows2=N, others=inside,
  // rblock=N.
  size_t next = 5;
  if (next < fields.size() && fields[next].starts_with("row2=")) {
    if (next + 1 >= fields.size() || !number(fields[next], "row2=d", tiling.rowDim2) ||
        !number(fields[next + 1], "rows2=", tiling.rows2) || tiling.rows2 < 2)
      return std::nullopt;
    next += 2;
  }
  if (next < fields.size() && fields[next] == "others=inside") {
    tiling.othersInside = true;
    ++next;
  }
  if (next < fields.size()) {
    if (!number(fields[next], "rblock=", tiling.reductionBlock) || tiling.reductionBlock == 0)
      return std::nullopt;
    ++next;
  }
  if (next != fields.size())
    return std::nullopt;
  if (tiling.rows == 0 || tiling.width == 0 || tiling.vectors == 0 || tiling.rows > 64 ||
      tiling.width > 64 || tiling.vectors > 16 || tiling.rows2 > 64)
    return std::nullopt;
  return tiling;
}

namespace {

bool fail(std::string *why, const llvm::Twine &reason) {
  if (why)
    *why = reason.str();
  return false;
}

/// Whether `type`'s innermost dimension has stride 1 (vector loads read it).
bool innermostContiguous(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(getStridesAndOffset(type, strides, offset)))
    return false;
  return strides.empty() || strides.back() == 1;
}

} // namespace

MultiplyAddBody mlir::het::matchMultiplyAddBody(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return {};
  // The body: out + in0 * in1 (either operand order), yielded, without
  // fast-math flags (which would let LLVM reassociate or fuse); 16-bit
  // inputs of an f32 accumulator are extended first (exact).
  Block &body = op.getRegion().front();
  BlockArgument in0 = body.getArgument(0), in1 = body.getArgument(1), out = body.getArgument(2);
  arith::MulFOp mul;
  arith::AddFOp add;
  for (Operation &inner : body.without_terminator()) {
    if (isa<arith::ExtFOp>(inner) && !mul)
      continue; // checked with the product's operands below
    if (auto m = dyn_cast<arith::MulFOp>(inner); m && !mul)
      mul = m;
    else if (auto a = dyn_cast<arith::AddFOp>(inner); a && mul && !add)
      add = a;
    else
      return {};
  }
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!mul || !add || !yield || yield.getNumOperands() != 1 || yield.getOperand(0) != add ||
      mul.getFastmathAttr().getValue() != arith::FastMathFlags::none ||
      add.getFastmathAttr().getValue() != arith::FastMathFlags::none)
    return {};
  // Both inputs in one format: each product operand is the input itself
  // (f32, the accumulator's type) or its extension (bf16/f16).
  bool extended = in0.getType() != out.getType();
  if (in0.getType() != in1.getType())
    return {};
  auto input = [&](Value v) -> Value {
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    if (!extended)
      return ext ? Value() : v;
    return ext && ext.getType() == out.getType() ? ext.getIn() : Value();
  };
  Value lhs = input(mul.getLhs()), rhs = input(mul.getRhs());
  bool mulOfInputs = lhs && rhs && ((lhs == in0 && rhs == in1) || (lhs == in1 && rhs == in0));
  bool addOfOut = (add.getLhs() == out && add.getRhs() == mul) ||
                  (add.getLhs() == mul && add.getRhs() == out);
  if (!mulOfInputs || !addOfOut ||
      !llvm::is_contained(op.getIteratorTypesArray(), utils::IteratorType::reduction))
    return {};
  MultiplyAddBody match;
  match.mul = mul;
  match.add = add;
  match.mulSwapped = lhs == in1;
  match.addOutFirst = add.getLhs() == out;
  return match;
}

bool mlir::het::isMultiplyAddContraction(linalg::GenericOp op) {
  return bool(matchMultiplyAddBody(op));
}

bool mlir::het::isTilableContraction(linalg::GenericOp op, std::string *why) {
  if (!isMultiplyAddContraction(op))
    return fail(why, "not a contraction out + in0 * in1 with a reduction");
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(operand.getType());
    if (!type)
      return fail(why, "not on buffers");
    if (!type.hasStaticShape())
      return fail(why, "not a static buffer");
  }
  // f32 accumulators; inputs f32 too, or bf16/f16 extended in the body.
  if (!cast<MemRefType>(op.getDpsInits()[0].getType()).getElementType().isF32())
    return fail(why, "not an f32 output");
  Type inputs = cast<MemRefType>(op.getDpsInputs()[0].getType()).getElementType();
  if (!inputs.isF32() && !inputs.isBF16() && !inputs.isF16())
    return fail(why, "inputs neither f32, bf16 nor f16");

  // The tiled loops read an input after loading the accumulators: an input
  // that is a view of the output would be read as updated where the untiled
  // loops read it before. (HetToLinalg never builds one; a guard, not a case.)
  auto root = [](Value value) {
    while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
      value = view.getViewSource();
    return value;
  };
  Value outRoot = root(op.getDpsInits()[0]);
  for (Value input : op.getDpsInputs())
    if (root(input) == outRoot)
      return fail(why, "an input is a view of the output");

  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  AffineMap outMap = op.getIndexingMapsArray()[2];
  if (!outMap.isProjectedPermutation() || outMap.getNumResults() == 0)
    return fail(why, "output map is not a projected permutation");
  unsigned vecDim = cast<AffineDimExpr>(outMap.getResults().back()).getPosition();
  for (unsigned d = 0; d < iterators.size(); ++d)
    if (iterators[d] == utils::IteratorType::parallel && !outMap.isFunctionOfDim(d))
      return fail(why, "a parallel dimension the output does not index");
  if (!innermostContiguous(cast<MemRefType>(op.getDpsInits()[0].getType())))
    return fail(why, "output's innermost dimension is strided");
  for (unsigned i = 0; i < 2; ++i) {
    AffineMap map = op.getIndexingMapsArray()[i];
    if (!map.isFunctionOfDim(vecDim))
      continue; // broadcast along the vector: one scalar per reduction point
    ArrayRef<AffineExpr> results = map.getResults();
    for (AffineExpr e : results.drop_back())
      if (e.isFunctionOfDim(vecDim))
        return fail(why, "an input reads the vector dimension outside its innermost index");
    AffineExpr rest = results.back() - getAffineDimExpr(vecDim, op.getContext());
    rest = simplifyAffineExpr(rest, map.getNumDims(), map.getNumSymbols());
    if (rest.isFunctionOfDim(vecDim))
      return fail(why, "an input reads the vector dimension with a stride");
    if (!innermostContiguous(cast<MemRefType>(op.getDpsInputs()[i].getType())))
      return fail(why, "an input's innermost dimension is strided");
  }
  return true;
}

std::string mlir::het::contractionSignature(linalg::GenericOp op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "contraction [";
  llvm::interleave(op.getStaticLoopRanges(), os, ",");
  os << "] [";
  llvm::interleave(op.getIteratorTypesArray(), os,
                   [&](utils::IteratorType t) {
                     os << (t == utils::IteratorType::parallel ? 'p' : 'r');
                   },
                   ",");
  os << "] ";
  // Maps without their "(d0, d1, d2) ->" header: the loop count is above.
  llvm::interleave(op.getIndexingMapsArray(), os,
                   [&](AffineMap map) {
                     os << "(";
                     llvm::interleave(map.getResults(), os, ",");
                     os << ")";
                   },
                   "|");
  os << " ";
  llvm::interleave(op->getOperandTypes(), os,
                   [&](Type type) {
                     llvm::interleave(cast<MemRefType>(type).getShape(), os, "x");
                   },
                   "|");
  // Whether the body reads `in0 * in1` or `in1 * in0`, `out + p` or
  // `p + out` is the same arithmetic, so not part of the key. The inputs'
  // format is: bf16 pairs run on another instruction.
  Type inputs = cast<MemRefType>(op.getDpsInputs()[0].getType()).getElementType();
  os << " f32";
  if (!inputs.isF32())
    os << " " << inputs;
  return text;
}

LogicalResult mlir::het::verifyTiling(linalg::GenericOp op, const ContractionTiling &tiling,
                                      std::string *why) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  AffineMap outMap = op.getIndexingMapsArray()[2];
  unsigned vecDim = cast<AffineDimExpr>(outMap.getResults().back()).getPosition();
  if (tiling.rowDim >= iterators.size() || tiling.rowDim == vecDim ||
      iterators[tiling.rowDim] != utils::IteratorType::parallel) {
    fail(why, "row dimension d" + llvm::Twine(tiling.rowDim) +
                  " is not a parallel output dimension other than the vector one (d" +
                  llvm::Twine(vecDim) + ")");
    return failure();
  }
  if (tiling.rows == 0 || tiling.width == 0 || tiling.vectors == 0 || tiling.rows2 == 0) {
    fail(why, "a zero size");
    return failure();
  }
  if (tiling.twoRowDims() && (tiling.rowDim2 >= iterators.size() || tiling.rowDim2 == vecDim ||
                              tiling.rowDim2 == tiling.rowDim ||
                              iterators[tiling.rowDim2] != utils::IteratorType::parallel)) {
    fail(why, "second row dimension d" + llvm::Twine(tiling.rowDim2) +
                  " is not a parallel output dimension other than the vector one (d" +
                  llvm::Twine(vecDim) + ") and the row one (d" + llvm::Twine(tiling.rowDim) + ")");
    return failure();
  }
  return success();
}

std::vector<ContractionTiling>
mlir::het::reductionBlockCandidates(linalg::GenericOp op,
                                    llvm::ArrayRef<ContractionTiling> tilings) {
  std::vector<ContractionTiling> candidates;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  auto outermost = llvm::find(iterators, utils::IteratorType::reduction);
  if (outermost == iterators.end())
    return candidates;
  int64_t size = ranges[outermost - iterators.begin()];
  for (const ContractionTiling &tiling : tilings)
    for (unsigned block : {1u, 2u, 4u, 8u, 16u, 32u}) {
      if (block >= size)
        break;
      ContractionTiling blocked = tiling;
      blocked.reductionBlock = block;
      candidates.push_back(blocked);
    }
  return candidates;
}

std::vector<ContractionTiling>
mlir::het::contractionTilingCandidates(linalg::GenericOp op, llvm::ArrayRef<unsigned> widths) {
  std::vector<ContractionTiling> candidates;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  AffineMap outMap = op.getIndexingMapsArray()[2];
  unsigned vecDim = cast<AffineDimExpr>(outMap.getResults().back()).getPosition();
  for (AffineExpr e : outMap.getResults().drop_back()) {
    unsigned rowDim = cast<AffineDimExpr>(e).getPosition();
    if (ranges[rowDim] < 2 && outMap.getNumResults() > 2)
      continue; // a unit dimension makes no rows; others will
    for (unsigned rows : {1u, 2u, 4u, 6u, 8u}) {
      if (rows > ranges[rowDim])
        continue;
      for (unsigned width : widths) {
        for (unsigned vectors : {1u, 2u, 4u}) {
          // Accumulators must stay in registers (32 on AVX-512, 16 on AVX2;
          // loads and broadcasts need a few more).
          // A block wider than the dimension is all tail: one such is enough.
          if (rows * vectors > 24 || (vectors > 1 && int64_t(width) * vectors > ranges[vecDim]))
            continue;
          for (bool rowsOutside : {true, false})
            candidates.push_back({rowDim, rows, width, vectors, rowsOutside});
        }
      }
    }
  }
  // Two row dimensions, where each input varies along one of them only
  // (so a block reuses each load across the other): rows x rows2 x vectors.
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto splitsInputs = [&](unsigned a, unsigned b) {
    return maps[0].isFunctionOfDim(a) != maps[0].isFunctionOfDim(b) &&
           maps[1].isFunctionOfDim(a) != maps[1].isFunctionOfDim(b) &&
           maps[0].isFunctionOfDim(a) != maps[1].isFunctionOfDim(a);
  };
  for (AffineExpr e : outMap.getResults().drop_back()) {
    unsigned rowDim = cast<AffineDimExpr>(e).getPosition();
    for (AffineExpr e2 : outMap.getResults().drop_back()) {
      unsigned rowDim2 = cast<AffineDimExpr>(e2).getPosition();
      if (rowDim2 == rowDim || !splitsInputs(rowDim, rowDim2))
        continue;
      for (unsigned rows : {2u, 4u, 6u}) {
        for (unsigned rows2 : {2u, 4u}) {
          if (rows > ranges[rowDim] || rows2 > ranges[rowDim2])
            continue;
          for (unsigned width : widths) {
            for (unsigned vectors : {1u, 2u}) {
              if (rows * rows2 * vectors > 24 ||
                  (vectors > 1 && int64_t(width) * vectors > ranges[vecDim]))
                continue;
              ContractionTiling tiling{rowDim, rows, width, vectors, /*rowsOutside=*/true};
              tiling.rowDim2 = rowDim2;
              tiling.rows2 = rows2;
              candidates.push_back(tiling);
              // The remaining parallel dimensions (a filter's taps) inside
              // the blocks too, where there are any.
              if (outMap.getNumResults() > 3) {
                tiling.othersInside = true;
                candidates.push_back(tiling);
              }
            }
          }
        }
      }
    }
  }
  return candidates;
}
