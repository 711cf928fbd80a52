//===- MoEExpertKernels.cpp - the experts' contractions on oneDNN ----------===//
//
// het.moe_expert_matmul and its weight gradient (HetMoEOps.td) as one
// oneDNN matrix product per expert over the rows its tokens filled: a
// grouped GEMM. Without a capacity an expert's buffer has T rows of which
// about T k / E are filled; a batched product over all of them would do
// E / k times the work. Row counts come from the routing (the same rule as
// the evaluator's kernels, lib/Eval/MoEKernels.cpp), each product is one of
// GemmEngines' cached primitives. Row counts change every step, and a
// oneDNN primitive is created per shape (about a millisecond): the products
// take row counts in steps of kRowStep (the forward computes up to the next
// step, reading at most kRowStep - 1 rows past the filled ones, and zeroes
// those results; the weight gradient adds a multiple of kRowStep rows and
// then the rest), so a run creates about C / kRowStep + 2 kRowStep shapes
// per product at most, whatever the routing.
//
//===----------------------------------------------------------------------===//

#include "GemmEngines.h"
#include "KernelCall.h"
#include "Kernels.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

using het::rt::KernelCall;

namespace {

constexpr int64_t kRowStep = 16;

/// Runs `body`, turning a kernel's value error (an expert out of range)
/// into the reference kernels' clean exit.
template <typename F> void guarded(const char *op, F body) {
  try {
    body();
  } catch (const het::eval::KernelError &error) {
    std::fprintf(stderr, "error: het.%s: %s\n", op, error.what());
    std::exit(1);
  }
}

std::vector<int64_t> filledRows(const KernelCall &c, int indicesOperand, int64_t experts,
                                int64_t capacity) {
  het::eval::Tensor<int64_t> indices(c.operandShape(indicesOperand));
  std::memcpy(indices.data.data(), c.indices(indicesOperand),
              indices.data.size() * sizeof(int64_t));
  return het::eval::moeFilledRows(indices, experts, capacity);
}

void expertMatmul(const KernelCall &c);
void expertWeightGrad(const KernelCall &c);

} // namespace

extern "C" {

/// y[e, :n_e] = x[e, :n_e] op(w[e]); the other rows zero. Word: transpose_rhs.
void hetrt_dnnl_moe_expert_matmul(const int64_t *meta, void *const *buffers) {
  guarded("moe_expert_matmul", [&] { expertMatmul(KernelCall(meta, buffers)); });
}

void hetrt_dnnl_moe_expert_weight_grad(const int64_t *meta, void *const *buffers) {
  guarded("moe_expert_weight_grad", [&] { expertWeightGrad(KernelCall(meta, buffers)); });
}

} // extern "C"

namespace {

void expertMatmul(const KernelCall &c) {
  const auto &x = c.operandShape(0), &w = c.operandShape(1);
  bool transposed = c.attribute(0) != 0;
  int64_t E = x[0], C = x[1], K = x[2], N = transposed ? w[1] : w[2];
  std::vector<int64_t> filled = filledRows(c, 2, E, C);
  float *y = c.result(0);
  for (int64_t e = 0; e < E; ++e) {
    float *ye = y + e * C * N;
    // Rows past the filled ones are computed up to the next step, then
    // zeroed: each result row depends on its own input row only.
    int64_t rows = std::min(C, (filled[e] + kRowStep - 1) / kRowStep * kRowStep);
    if (rows > 0)
      het::rt::runGemm(het::rt::GemmEngine::OneDnn, {rows, N, K, false, transposed},
                       c.operand(0) + e * C * K, c.operand(1) + e * K * N, ye);
    std::memset(ye + filled[e] * N, 0, (C - filled[e]) * N * sizeof(float));
  }
}

/// dw[e] = x[e, :n_e]^T dy[e, :n_e] ([K, N], or [N, K] = dy^T x with
/// transpose_result). Word: transpose_result.
void expertWeightGrad(const KernelCall &c) {
  const auto &x = c.operandShape(0), &dy = c.operandShape(1);
  bool transposed = c.attribute(0) != 0;
  int64_t E = x[0], C = x[1], K = x[2], N = dy[2];
  std::vector<int64_t> filled = filledRows(c, 2, E, C);
  float *dw = c.result(0);
  for (int64_t e = 0; e < E; ++e) {
    float *dwe = dw + e * K * N;
    const float *xe = c.operand(0) + e * C * K, *dye = c.operand(1) + e * C * N;
    if (filled[e] == 0) {
      std::memset(dwe, 0, K * N * sizeof(float));
      continue;
    }
    // The sum over rows [0, n) in two products: a multiple of kRowStep
    // rows, then the rest added (rows past n are never read).
    int64_t whole = filled[e] / kRowStep * kRowStep;
    bool added = false;
    for (auto [begin, count] : {std::pair{int64_t{0}, whole}, std::pair{whole, filled[e] - whole}}) {
      if (count == 0)
        continue;
      if (transposed) // [N, K] = dy[:n]^T x[:n]
        het::rt::runGemm(het::rt::GemmEngine::OneDnn, {N, K, count, true, false}, dye + begin * N,
                         xe + begin * K, dwe, /*accumulate=*/added);
      else // [K, N] = x[:n]^T dy[:n]
        het::rt::runGemm(het::rt::GemmEngine::OneDnn, {K, N, count, true, false}, xe + begin * K,
                         dye + begin * N, dwe, /*accumulate=*/added);
      added = true;
    }
  }
}

} // namespace

