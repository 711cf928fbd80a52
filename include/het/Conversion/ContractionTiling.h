//===- ContractionTiling.h - register-tiled, vectorized generated contractions -*- C++ -*-===//
//
// `library=mlir` lowers matmuls, linear layers and convolutions to
// linalg.generic contractions (out += in0 * in1), which linalg-to-loops
// turns into scalar loop nests. het-tile-contractions replaces a
// contraction (on buffers, after deallocation) by a register-tiled,
// vectorized loop nest chosen by a ContractionTiling:
//
//   for blocks of `reductionBlock` along the outermost reduction dim:  (if set)
//     for the other parallel dims:             (outermost one scf.parallel)
//       for blocks of `rows2` along the second row dim:                 (if set)
//         for row blocks of `rows` / vector blocks of `vectors` x `width` columns
//          [for the other parallel dims, when `othersInside`, instead of above]
//           acc[rows][rows2][vectors] = out tile         (vector registers)
//           for every reduction point of the block, in iteration order:
//             acc[i][k][j] = acc[i][k][j] + in0 * in1    (vector loads, broadcasts)
//           out tile = acc
//
// The reduction block is cache blocking: every output tile streams its
// inputs over the whole reduction, which for a convolution's filter
// gradient (a sum over the batch and the image) means re-reading megabytes
// from L3 or memory per tile; a block of a few batch elements stays in L2
// while every tile passes over it. The accumulators go through the output
// between blocks, exactly, so each sum keeps its order.
//
// `vecDim`, the vector dimension, is the output's innermost (contiguous)
// dimension; `rowDim` is another parallel dimension of the output. Each
// output element still sums its products in the evaluator's order, as a
// separate multiply and add (no fused multiply-add), so results are
// bitwise those of the untiled loops. Sizes that the blocks do not divide
// get tail blocks (fewer rows, one narrower vector).
//
// Which tiling a contraction gets is looked up by its signature (its
// iteration space, maps and operand types, not where it is): het-tune
// kernels --library mlir measures candidates into the tuning database and
// het-compile --tuning-db reads the best back (docs/tuning.md).
//
//===----------------------------------------------------------------------===//

#ifndef HET_CONVERSION_CONTRACTIONTILING_H
#define HET_CONVERSION_CONTRACTIONTILING_H

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class Operation;
class RewriterBase;
namespace linalg {
class GenericOp;
} // namespace linalg
} // namespace mlir

namespace mlir::het {

struct ContractionTiling {
  unsigned rowDim = 0;  ///< iteration dimension blocked into `rows` registers rows
  unsigned rows = 1;    ///< rows per register block
  unsigned width = 16;  ///< f32 lanes per vector
  unsigned vectors = 1; ///< vectors per register block row
  bool rowsOutside = true; ///< row blocks in the outer loop (else column blocks)
  /// Iterations of the outermost reduction dimension per cache block (0: no
  /// blocking, the whole reduction per tile).
  unsigned reductionBlock = 0;
  /// A second row dimension (with rows2 > 1): the register block is rows x
  /// rows2 x vectors. It pays where one input varies along rowDim and the
  /// other along rowDim2 (a filter gradient's output and input channels):
  /// per reduction point rows + rows2 vector loads feed rows x rows2
  /// products, where one row dimension needs a load per product.
  unsigned rowDim2 = 0;
  unsigned rows2 = 1;

  /// The other parallel dimensions looped inside each row/column block
  /// rather than outside all blocks: successive register blocks then reuse
  /// the same input rows from the L1 cache (a filter gradient's 9 taps read
  /// the same dy and x rows, shifted), where outside every tap streams them
  /// from L2.
  bool othersInside = false;

  bool twoRowDims() const { return rows2 > 1; }

  /// "row=d0 rows=4 width=16 vectors=2 order=rows", with " row2=d1 rows2=4"
  /// for a second row dimension, " others=inside" and " rblock=8" when
  /// blocked (what the database stores).
  std::string str() const;
  /// The inverse of str(); std::nullopt for anything it did not write.
  static std::optional<ContractionTiling> parse(llvm::StringRef text);
};

/// Whether `op` is a contraction: two inputs, one output, a body
/// `out + in0 * in1` (either operand order, no fast-math flags) and at least
/// one reduction dimension -- what HetToLinalg builds for matmuls, linear
/// layers and convolutions.
bool isMultiplyAddContraction(linalg::GenericOp op);

/// The multiply and the add of a contraction's body (both null when `op`
/// is none), and how they read their operands. A body may extend two
/// bf16/f16 inputs to its f32 accumulator before the product.
struct MultiplyAddBody {
  Operation *mul = nullptr; // arith.mulf
  Operation *add = nullptr; // arith.addf
  bool mulSwapped = false; // in1 * in0
  bool addOutFirst = true; // out + product
  explicit operator bool() const { return mul != nullptr; }
};
MultiplyAddBody matchMultiplyAddBody(linalg::GenericOp op);

/// Whether `op` is a contraction het-tile-contractions can tile (on
/// buffers: f32 accumulators, inputs f32 or bf16/f16, out += in0 * in1, an output whose innermost index is a
/// parallel dimension that the inputs read contiguously or not at all);
/// otherwise why not, in `why`.
bool isTilableContraction(linalg::GenericOp op, std::string *why = nullptr);

/// The key tuning records use for `op`: its loop ranges, iterator types,
/// indexing maps and operand types, e.g.
/// "contraction [256,784,1024] [p,r,p] (d0,d1)|(d1,d2)|(d0,d2) 256x784|784x1024|256x1024 f32".
std::string contractionSignature(linalg::GenericOp op);

/// The tilings worth timing for `op` (registers permitting), for
/// het-tune: every parallel output dimension as the row dimension, 1-8
/// rows, 1-4 vectors of `widths` lanes, both loop orders; and pairs of row
/// dimensions that split the inputs (one varies along each), 2-6 x 2-4
/// rows of 1-2 vectors.
std::vector<ContractionTiling> contractionTilingCandidates(linalg::GenericOp op,
                                                           llvm::ArrayRef<unsigned> widths);

/// Cache-blocked variants of `tilings` for `op`: reduction blocks of 1, 2,
/// 4, 8, 16 and 32 iterations of its outermost reduction dimension (those
/// shorter than it). het-tune times them on the best register tilings.
std::vector<ContractionTiling> reductionBlockCandidates(linalg::GenericOp op,
                                                        llvm::ArrayRef<ContractionTiling> tilings);

/// Checks `tiling` against `op` (its row dimension is a parallel output
/// dimension other than the vector one; sizes are positive).
LogicalResult verifyTiling(linalg::GenericOp op, const ContractionTiling &tiling,
                           std::string *why = nullptr);

/// Replaces `op` by the tiled loop nest. `bf16Dot`: bf16 inputs' innermost
/// reduction runs in pairs on the AVX512-BF16 dot product (the target must
/// have it); otherwise 16-bit inputs are extended to f32 as they are read.
LogicalResult tileContraction(RewriterBase &rewriter, linalg::GenericOp op,
                              const ContractionTiling &tiling, bool bf16Dot = false);

/// Which tiling a contraction with this signature gets (std::nullopt:
/// leave it to linalg-to-loops).
using ContractionTilingLookup =
    std::function<std::optional<ContractionTiling>(llvm::StringRef signature)>;

/// `het-tile-contractions`: tiles every tilable contraction `lookup`
/// knows (a `het.contraction_tiling` string attribute on the op overrides
/// it, for tests). With `everywhere`, contractions the lookup does not know
/// get that tiling instead (the pass option `tiling=...`). `bf16Dot` as
/// for tileContraction (the pass option `bf16-dot`).
std::unique_ptr<Pass> createTileContractionsPass(ContractionTilingLookup lookup,
                                                 std::optional<ContractionTiling> everywhere = {},
                                                 bool bf16Dot = false);

void registerTileContractionsPass();

} // namespace mlir::het

#endif // HET_CONVERSION_CONTRACTIONTILING_H
