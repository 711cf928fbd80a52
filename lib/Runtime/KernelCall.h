//===- KernelCall.h - decoding one generated kernel call -----------*- C++ -*-===//
//
// Generated code calls hetrt_<library>_<op>(meta, buffers); this reads the
// meta words (counts, shapes, layouts, attributes; see
// include/het-c/hetrt.h).
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_KERNELCALL_H
#define HET_LIB_RUNTIME_KERNELCALL_H

#include <cstdint>
#include <cstring>
#include <vector>

namespace het::rt {

/// How a buffer's elements are laid out: bits 32-39 of its rank word.
enum class BufferLayout : int64_t {
  RowMajor = 0,
  /// A [N, C, H, W] activation as [N, C/b, H, W, b] (oneDNN's nChw16c or
  /// nChw8c): b is this process's channel block (ChannelBlock.h). het-compile
  /// sets it only where C is a multiple of 16, so the buffer's size is the
  /// row-major one whichever block the CPU has.
  ChannelBlocked = 1,
};

/// A buffer's element format: bits 40-47 of its rank word (mixed precision;
/// include/het-c/hetrt.h).
enum class ElementFormat : int64_t { F32 = 0, BF16 = 1, F16 = 2 };

struct KernelCall {
  int64_t numOperands = 0, numResults = 0;
  std::vector<std::vector<int64_t>> shapes; // operands, then results
  std::vector<BufferLayout> layouts;        // operands, then results
  std::vector<ElementFormat> formats;       // operands, then results
  const int64_t *attributes = nullptr;
  void *const *buffers = nullptr;

  KernelCall(const int64_t *meta, void *const *buffers) : buffers(buffers) {
    numOperands = meta[0];
    numResults = meta[1];
    const int64_t *cursor = meta + 2;
    for (int64_t i = 0; i < numOperands + numResults; ++i) {
      int64_t word = *cursor++;
      int64_t rank = word & 0xffffffff;
      layouts.push_back(static_cast<BufferLayout>((word >> 32) & 0xff));
      formats.push_back(static_cast<ElementFormat>((word >> 40) & 0xff));
      shapes.emplace_back(cursor, cursor + rank);
      cursor += rank;
    }
    attributes = cursor;
  }

  const std::vector<int64_t> &operandShape(int i) const { return shapes[i]; }
  const std::vector<int64_t> &resultShape(int i) const { return shapes[numOperands + i]; }
  BufferLayout operandLayout(int i) const { return layouts[i]; }
  BufferLayout resultLayout(int i) const { return layouts[numOperands + i]; }
  ElementFormat operandFormat(int i) const { return formats[i]; }
  ElementFormat resultFormat(int i) const { return formats[numOperands + i]; }
  /// Whether every buffer is f32 (or i64): what kernels without a
  /// mixed-precision path accept.
  bool allF32() const {
    for (ElementFormat f : formats)
      if (f != ElementFormat::F32)
        return false;
    return true;
  }
  float *operand(int i) const { return static_cast<float *>(buffers[i]); }
  const int64_t *indices(int i) const { return static_cast<const int64_t *>(buffers[i]); }
  float *result(int i) const { return static_cast<float *>(buffers[numOperands + i]); }
  int64_t attribute(int k) const { return attributes[k]; }
  double floatAttribute(int k) const {
    double value;
    std::memcpy(&value, &attributes[k], sizeof value);
    return value;
  }
};

inline int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

} // namespace het::rt

#endif
