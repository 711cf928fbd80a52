// From torch tensors to what hetccl's C API takes: element types, reduction
// operators, and contiguous host memory.
#pragma once

#include "het-c/hetccl.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <vector>

namespace het::torchccl {

// What a reduction of `tensor` with `op` becomes in hetccl. Complex tensors
// reduce as pairs of reals for SUM and AVG (as NCCL's backend does); every
// other combination hetccl cannot compute exactly is a ValueError naming the
// collective, the dtype and the operator.
struct Reduction {
  hetcclDataType_t type;
  hetcclRedOp_t op;
};
Reduction reductionFor(const at::Tensor& tensor, const c10d::ReduceOp& op, const char* collective);

// Moves that only copy bytes (broadcast, gathers, all-to-all, send/recv)
// work for every dtype: they travel as uint8.
constexpr hetcclDataType_t kBytes = hetcclUint8;

// A contiguous CPU tensor holding what the user's tensor holds: the user's
// tensor itself when it already is one (zero copies), else a copy that
// writeBack() copies back when the collective has finished. Device tensors
// (CUDA, HIP) are staged through host memory this way.
class HostTensor {
public:
  HostTensor() = default;
  explicit HostTensor(const at::Tensor& user);
  // An uninitialised host buffer shaped like `user`, for outputs whose old
  // contents do not matter.
  static HostTensor forOutput(const at::Tensor& user);

  void* data() const { return host_.data_ptr(); }
  size_t bytes() const { return host_.numel() * host_.element_size(); }
  // Element count and type as a reduction sees them (complex: two reals).
  size_t reductionCount() const;
  const at::Tensor& host() const { return host_; }
  void writeBack() const;

private:
  at::Tensor user_, host_;
};

// Rejects what no hetccl collective takes, naming the collective: more than
// one tensor per process (multi-device lists), sparse tensors, and tensors
// of different dtype or shape where they must agree.
void checkSingleTensor(const std::vector<at::Tensor>& tensors, const char* collective);
void checkDense(const at::Tensor& tensor, const char* collective);
void checkSameTypeAndSize(const at::Tensor& expected, const at::Tensor& actual, const char* collective,
                          const char* what);

} // namespace het::torchccl
