//===- ChannelBlock.cpp - the channel block oneDNN uses on this CPU -------===//

#include "ChannelBlock.h"

#include <oneapi/dnnl/dnnl.hpp>

int64_t het::rt::channelBlock() {
  // Asked of oneDNN once: a forward convolution over 16 channels with its
  // layouts left to the library (as DnnlKernels.cpp's are) says the block
  // its JIT code wants here (ONEDNN_MAX_CPU_ISA included).
  static const int64_t block = [] {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    auto any = [](const dnnl::memory::dims &d) { return dnnl::memory::desc(d, dt::f32, tag::any); };
    dnnl::memory::dims data{1, 16, 8, 8};
    auto desc = dnnl::convolution_forward::desc(
        dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any(data),
        any({16, 16, 3, 3}), any(data), {1, 1}, {0, 0}, {1, 1}, {1, 1});
    dnnl::memory::desc chosen =
        dnnl::convolution_forward::primitive_desc(desc, engine).src_desc();
    if (chosen == dnnl::memory::desc(data, dt::f32, tag::nChw16c))
      return int64_t{16};
    return int64_t{8};
  }();
  return block;
}
