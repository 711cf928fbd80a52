//===- ReferenceKernels.cpp - hetrt_ref_*: het's reference kernels ---------===//
//
// Every library-backed op has a reference implementation: the evaluator's
// kernels (lib/Eval/*Kernels.cpp, which define the ops' semantics), run on
// copies of the buffers. Used for ops oneDNN has no primitive for and that
// are not linalg code yet (batch norm inference, embeddings, the
// mixture-of-experts ops; pooling has
// its own file, PoolingKernels.cpp) and, with
// `het-compile --library=reference`, for all of them. Value errors (a label
// out of range) end the process with the kernel's message.
//
//===----------------------------------------------------------------------===//

#include "KernelCall.h"

#include "het-c/hetrt.h"

#include "Kernels.h"
#include "MoEReport.h"
#include "RandomState.h"

#include <cstdio>
#include <cstdlib>

using namespace het::eval;
using het::rt::KernelCall;

int hetrtTensorParallelRank(); // PipelineComm.cpp

namespace {

Tensor<float> floats(const KernelCall &call, int i) {
  Tensor<float> t(call.operandShape(i));
  std::memcpy(t.data.data(), call.operand(i), t.data.size() * sizeof(float));
  return t;
}

Tensor<int64_t> integers(const KernelCall &call, int i) {
  Tensor<int64_t> t(call.operandShape(i));
  std::memcpy(t.data.data(), call.indices(i), t.data.size() * sizeof(int64_t));
  return t;
}

void store(const KernelCall &call, int r, const Tensor<float> &t) {
  std::memcpy(call.result(r), t.data.data(), t.data.size() * sizeof(float));
}

template <size_t N> void storeAll(const KernelCall &call, const std::array<Tensor<float>, N> &ts) {
  for (size_t r = 0; r < N; ++r)
    store(call, static_cast<int>(r), ts[r]);
}

ConvGeometry conv(const KernelCall &c) {
  ConvGeometry g;
  g.strides = {c.attribute(0), c.attribute(1)};
  g.padding = {c.attribute(2), c.attribute(3)};
  g.dilation = {c.attribute(4), c.attribute(5)};
  g.groups = c.attribute(6);
  return g;
}

/// Runs `body`, turning a kernel's value error into a clean exit.
template <typename F> void guarded(const char *op, F body) {
  try {
    body();
  } catch (const KernelError &error) {
    std::fprintf(stderr, "error: het.%s: %s\n", op, error.what());
    std::exit(1);
  }
}

} // namespace

#define HETRT_REF(name)                                                           \
  extern "C" void hetrt_ref_##name(const int64_t *meta, void *const *buffers);    \
  static void ref_##name(const KernelCall &c);                                    \
  extern "C" void hetrt_ref_##name(const int64_t *meta, void *const *buffers) {   \
    KernelCall call(meta, buffers);                                               \
    guarded(#name, [&] { ref_##name(call); });                                    \
  }                                                                               \
  static void ref_##name(const KernelCall &c)

HETRT_REF(matmul) {
  store(c, 0, matmul(floats(c, 0), floats(c, 1), c.attribute(0) != 0, c.attribute(1) != 0));
}
HETRT_REF(linear) {
  Tensor<float> bias;
  if (c.numOperands == 3)
    bias = floats(c, 2);
  store(c, 0, linear(floats(c, 0), floats(c, 1), c.numOperands == 3 ? &bias : nullptr,
                     static_cast<ActivationKind>(c.attribute(0))));
}
HETRT_REF(linear_grad) { storeAll(c, linearGrad(floats(c, 0), floats(c, 1), floats(c, 2))); }
HETRT_REF(conv2d) {
  Tensor<float> bias;
  if (c.numOperands == 3)
    bias = floats(c, 2);
  store(c, 0, conv2d(floats(c, 0), floats(c, 1), c.numOperands == 3 ? &bias : nullptr, conv(c)));
}
HETRT_REF(conv2d_grad_input) {
  store(c, 0, conv2dGradInput(floats(c, 0), floats(c, 1), c.resultShape(0), conv(c)));
}
HETRT_REF(conv2d_grad_filter) {
  store(c, 0, conv2dGradFilter(floats(c, 0), floats(c, 1), c.resultShape(0), conv(c)));
}
HETRT_REF(batch_norm) {
  storeAll(c, batchNorm(floats(c, 0), floats(c, 1), floats(c, 2), c.floatAttribute(0), false));
}
HETRT_REF(batch_norm_relu) {
  storeAll(c, batchNorm(floats(c, 0), floats(c, 1), floats(c, 2), c.floatAttribute(0), true));
}
HETRT_REF(batch_norm_inference) {
  store(c, 0, batchNormInference(floats(c, 0), floats(c, 1), floats(c, 2), floats(c, 3),
                                 floats(c, 4), c.floatAttribute(0)));
}
HETRT_REF(batch_norm_grad) {
  storeAll(c, batchNormGrad(floats(c, 0), static_cast<const Tensor<float> *>(nullptr),
                            floats(c, 1), floats(c, 2), floats(c, 3), floats(c, 4)));
}
HETRT_REF(batch_norm_relu_grad) {
  Tensor<float> output = floats(c, 1);
  storeAll(c, batchNormGrad(floats(c, 0), &output, floats(c, 2), floats(c, 3), floats(c, 4),
                            floats(c, 5)));
}
// Word: the members over which the vocabulary is split (1: not split);
// this rank's shard is its index among its replica's tensor-parallel
// devices.
HETRT_REF(embedding) {
  int64_t members = c.attribute(0), member = members > 1 ? hetrtTensorParallelRank() : 0;
  store(c, 0, embedding(floats(c, 0), integers(c, 1), member, members));
}
HETRT_REF(embedding_grad) {
  int64_t members = c.attribute(0), member = members > 1 ? hetrtTensorParallelRank() : 0;
  store(c, 0, embeddingGrad(floats(c, 0), integers(c, 1), c.resultShape(0), member, members,
                            c.attribute(1)));
}

// Mixture of experts. Words: the router's top_k and normalize; the
// router gradient's normalize. Capacities and expert counts come from the
// buffers' shapes.
HETRT_REF(moe_router) {
  MoERouting<float> routing = moeRouter(floats(c, 0), c.attribute(0), c.attribute(1) != 0);
  store(c, 0, routing.weights);
  std::memcpy(c.result(1), routing.indices.data.data(),
              routing.indices.data.size() * sizeof(int64_t));
}
HETRT_REF(moe_router_grad) {
  store(c, 0, moeRouterGrad(floats(c, 0), floats(c, 1), integers(c, 2), c.attribute(0) != 0));
}
// Word: whether this dispatch is a forward one, whose dropped choices the
// run reports (MoEReport.h).
HETRT_REF(moe_dispatch) {
  Tensor<float> weights;
  if (c.numOperands == 3)
    weights = floats(c, 2);
  int64_t dropped = 0;
  store(c, 0, moeDispatch(floats(c, 0), integers(c, 1), c.numOperands == 3 ? &weights : nullptr,
                          c.resultShape(0), &dropped));
  if (c.attribute(0))
    het::rt::countExpertChoices(het::rt::product(c.operandShape(1)), dropped);
}
HETRT_REF(moe_combine) {
  Tensor<float> weights;
  if (c.numOperands == 3)
    weights = floats(c, 2);
  store(c, 0, moeCombine(floats(c, 0), integers(c, 1), c.numOperands == 3 ? &weights : nullptr));
}
HETRT_REF(moe_slot_grad) { store(c, 0, moeSlotGrad(floats(c, 0), floats(c, 1), integers(c, 2))); }
HETRT_REF(moe_expert_matmul) {
  store(c, 0, moeExpertMatmul(floats(c, 0), floats(c, 1), integers(c, 2), c.attribute(0) != 0));
}
HETRT_REF(moe_expert_weight_grad) {
  store(c, 0,
        moeExpertWeightGrad(floats(c, 0), floats(c, 1), integers(c, 2), c.attribute(0) != 0));
}
HETRT_REF(moe_expert_fraction) {
  store(c, 0, moeExpertFraction<float>(integers(c, 0), c.resultShape(0)[0]));
}

// The step and sample position come from the driver running the step
// (Main.cpp, PipelineMain.cpp: hetrtRandomContext).
HETRT_REF(dropout) {
  store(c, 0, dropout(floats(c, 0), c.floatAttribute(0), c.attribute(1), c.attribute(2),
                      hetrtRandomContext()));
}

namespace {
/// Exits with "error: <what> <value> at position <i> is outside <range>"
/// unless every value is in [0, bound).
void checkRange(const int64_t *values, int64_t count, int64_t bound, const char *what,
                const char *range) {
  for (int64_t i = 0; i < count; ++i)
    if (values[i] < 0 || values[i] >= bound) {
      std::fprintf(stderr, "error: %s %lld at position %lld is outside %s[0, %lld)\n", what,
                   static_cast<long long>(values[i]), static_cast<long long>(i), range,
                   static_cast<long long>(bound));
      std::exit(1);
    }
}
} // namespace

/// Generated code gathers by these values (logits by label, table rows by
/// token id): they are checked here first, with the reference kernels'
/// messages.
void hetrt_check_indices(const int64_t *indices, int64_t count, int64_t rows) {
  checkRange(indices, count, rows, "het.embedding: index", "the table's ");
}

void hetrt_check_labels(const int64_t *labels, int64_t count, int64_t classes) {
  checkRange(labels, count, classes, "het.cross_entropy: label", "");
}
