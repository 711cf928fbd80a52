// Top-k sparsification with error feedback (Stich et al., "Sparsified SGD
// with memory"). Each rank adds its residual to the gradient, keeps the k
// entries of largest magnitude (ties broken by lower index, so the choice is
// deterministic), sends them as (u32 index, f32 value) pairs, and stores the
// rest as the new residual. Nothing is lost, only delayed: the sum over
// steps of what was sent equals the sum of gradients minus the current
// residual. The pairs are all-gathered (ring) and summed in rank order, so
// every rank gets the same dense result.
#include "Algorithms/Algorithms.h"
#include "Common/Error.h"
#include "Compression/Compression.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace hetccl {

void topkAllReduce(hetcclComm* c, float* buf, size_t count, double ratio, const void* key) {
  if (count > 0xffffffffull) fail(hetcclInvalidArgument, "top-k compression supports at most 2^32-1 elements");
  size_t k = std::max<size_t>(1, size_t(std::ceil(ratio * double(count))));
  k = std::min(k, count);
  std::vector<float>& res = c->residuals[key];
  if (res.size() != count) res.assign(count, 0.0f);
  for (size_t i = 0; i < count; ++i) res[i] += buf[i];
  std::vector<uint32_t> idx(count);
  std::iota(idx.begin(), idx.end(), 0u);
  auto better = [&](uint32_t a, uint32_t b) {
    float fa = std::fabs(res[a]), fb = std::fabs(res[b]);
    return fa > fb || (fa == fb && a < b);
  };
  std::nth_element(idx.begin(), idx.begin() + ptrdiff_t(k - 1), idx.end(), better);
  std::sort(idx.begin(), idx.begin() + ptrdiff_t(k));
  int p = c->nranks;
  size_t rec = 8 * k;
  char* all = c->scratchBuf(2, rec * size_t(p));
  char* mine = all + rec * size_t(c->rank);
  for (size_t j = 0; j < k; ++j) {
    uint32_t ix = idx[j];
    memcpy(mine + 8 * j, &ix, 4);
    memcpy(mine + 8 * j + 4, &res[ix], 4);
    res[ix] = 0.0f; // sent: leaves the residual
  }
  ringAllGather(c, allMembers(c), all, rec * size_t(p), 1);
  std::fill(buf, buf + count, 0.0f);
  for (int r = 0; r < p; ++r) {
    const char* pr = all + rec * size_t(r);
    for (size_t j = 0; j < k; ++j) {
      uint32_t ix;
      float v;
      memcpy(&ix, pr + 8 * j, 4);
      memcpy(&v, pr + 8 * j + 4, 4);
      if (ix >= count) fail(hetcclRemoteError, "rank " + std::to_string(r) + " sent a top-k index out of range");
      buf[ix] += v;
    }
  }
}

} // namespace hetccl
