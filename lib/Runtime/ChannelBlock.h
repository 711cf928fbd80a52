//===- ChannelBlock.h - channel-blocked activations ---------------*- C++ -*-===//
//
// oneDNN's JIT convolutions and batch norm work on activations stored
// [N, C/b, H, W, b] (nChw16c with AVX-512, nChw8c below); on row-major NCHW
// they reorder in and out of every call, about a third of a small CNN's
// step. het-compile marks the activations that only such calls (and het's
// pooling) touch as channel-blocked (BufferLayout::ChannelBlocked), so they
// stay blocked from one call to the next. b is chosen here, at run time,
// as the block oneDNN's convolution picks on this CPU, so one executable
// runs blocked on any x86 CPU; het-compile marks only C % 16 == 0, which
// every such b divides.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_CHANNELBLOCK_H
#define HET_LIB_RUNTIME_CHANNELBLOCK_H

#include "KernelCall.h"

#include <cstdint>
#include <vector>

namespace het::rt {

/// The channel block of BufferLayout::ChannelBlocked in this process: 16
/// or 8 (the block of oneDNN's forward convolution on this CPU; 8 when it
/// picks neither).
int64_t channelBlock();

/// Where the [H, W] plane of channel c of sample n lies in a [N, C, H, W]
/// buffer stored in either layout, and how to step along it.
struct PlaneLayout {
  int64_t channels = 0, height = 0, width = 0;
  int64_t block = 1; // 1: row-major NCHW

  PlaneLayout(const std::vector<int64_t> &shape, BufferLayout layout)
      : channels(shape[1]), height(shape[2]), width(shape[3]),
        block(layout == BufferLayout::ChannelBlocked ? channelBlock() : 1) {}

  /// The offset of element (n, c, 0, 0).
  int64_t plane(int64_t n, int64_t c) const {
    return (n * (channels / block) + c / block) * height * width * block + c % block;
  }
  int64_t rowStride() const { return width * block; }
  int64_t columnStride() const { return block; }
};

} // namespace het::rt

#endif
