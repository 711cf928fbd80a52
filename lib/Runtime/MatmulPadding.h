//===- MatmulPadding.h - B operands whose rows alias in the L1 -----*- C++ -*-===//
//
// oneDNN 2.6's brgemm matmul (AVX-512) streams a non-transposed B [K, N]
// row by row. When those rows lie a multiple of 4 KiB apart, the K rows of
// each block fall into a few L1 sets and evict each other: GPT-2's MLP
// (N = 3072 floats, rows 12 KiB apart) ran at 37-101 GFLOP/s instead of
// 130-185 on one core, N = 1024, 5120 and 6144 at 52-134 against 172-195
// (2026-12-06, this repository's 2-core Xeon VM; the same products with rows
// 64 bytes longer ran at full speed every time, and rows 3 or 9 KiB apart,
// GPT-2's 768 and 2304, ran at full speed as they are). So such a B is
// first copied (a oneDNN reorder: O(K N) bytes against O(M K N) FLOPs) into
// rows 64 bytes longer. The rule depends on B's shape alone, so every
// replica share of a pipeline pads alike.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_MATMULPADDING_H
#define HET_LIB_RUNTIME_MATMULPADDING_H

#include <cstddef>
#include <cstdint>

namespace het::rt {

/// The row stride (in elements) to copy a row-major B of `rows` rows and
/// row stride `stride` into, or 0 when it runs as it is.
inline int64_t paddedRowStride(int64_t rows, int64_t stride, size_t elementBytes) {
  int64_t bytes = stride * static_cast<int64_t>(elementBytes);
  if (rows < 64 || bytes < 4096 || bytes % 4096 != 0)
    return 0;
  return stride + 64 / static_cast<int64_t>(elementBytes);
}

} // namespace het::rt

#endif // HET_LIB_RUNTIME_MATMULPADDING_H
