// Compressed all-reduce of f32 buffers (Sum or Avg only: the codecs are
// linear approximations, meaningless for min/max/prod).
#pragma once

#include "Comm.h"

namespace hetccl {

// Ring all-reduce that sends encoded chunks (fp16, bf16, int8).
void compressedRingAllReduce(hetcclComm* c, float* buf, size_t count, hetcclCompression_t z);
// Top-k with error feedback: each rank sends its k largest |g + residual|
// as (index, value) pairs; what it did not send stays in the residual kept
// for `key` and is added to the next call's gradient.
void topkAllReduce(hetcclComm* c, float* buf, size_t count, double ratio, const void* key);

} // namespace hetccl
