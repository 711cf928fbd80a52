//===- Kernels.h - reference kernels of the het compute ops --------*- C++ -*-===//
//
// One function per op semantics, free of MLIR so each is a plain loop nest
// over Tensor<T>. Instantiated for float and double. Shapes have been checked
// by the op verifiers; kernels only check what depends on values (an index
// out of range), by throwing KernelError, which the evaluator reports on the
// op that ran.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_EVAL_KERNELS_H
#define HET_LIB_EVAL_KERNELS_H

#include "het/Eval/RandomContext.h"
#include "Tensor.h"

#include <array>
#include <stdexcept>
#include <string>

namespace het::eval {

struct KernelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Element-wise (ElementwiseKernels.cpp) ------------------------------------
enum class BinaryKind { Add, Sub, Mul };
template <typename T>
Tensor<T> binary(BinaryKind kind, const Tensor<T> &lhs, const Tensor<T> &rhs,
                 const Shape &resultShape);
template <typename T> Tensor<T> relu(const Tensor<T> &x);
template <typename T> Tensor<T> reluGrad(const Tensor<T> &dy, const Tensor<T> &x);
template <typename T> Tensor<T> gelu(const Tensor<T> &x, bool tanhApproximation);
template <typename T>
Tensor<T> geluGrad(const Tensor<T> &dy, const Tensor<T> &x, bool tanhApproximation);
template <typename T> T geluScalar(T x, bool tanhApproximation);
template <typename T> Tensor<T> broadcastTo(const Tensor<T> &x, const Shape &shape);
template <typename T> Tensor<T> sumToShape(const Tensor<T> &x, const Shape &shape);

// Dense layers (DenseKernels.cpp) ------------------------------------------
template <typename T>
Tensor<T> matmul(const Tensor<T> &lhs, const Tensor<T> &rhs, bool transposeLhs,
                 bool transposeRhs);
enum class ActivationKind { None, ReLU, GELU };
template <typename T>
Tensor<T> linear(const Tensor<T> &x, const Tensor<T> &w, const Tensor<T> *bias,
                 ActivationKind activation);
template <typename T>
std::array<Tensor<T>, 3> linearGrad(const Tensor<T> &dy, const Tensor<T> &x,
                                    const Tensor<T> &w);

// Convolution and pooling (ConvKernels.cpp) --------------------------------
struct ConvGeometry {
  std::array<int64_t, 2> strides{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};
template <typename T>
Tensor<T> conv2d(const Tensor<T> &x, const Tensor<T> &w, const Tensor<T> *bias,
                 const ConvGeometry &g);
template <typename T>
Tensor<T> conv2dGradInput(const Tensor<T> &dy, const Tensor<T> &w,
                          const Shape &inputShape, const ConvGeometry &g);
template <typename T>
Tensor<T> conv2dGradFilter(const Tensor<T> &dy, const Tensor<T> &x,
                           const Shape &filterShape, const ConvGeometry &g);
struct PoolGeometry {
  std::array<int64_t, 2> kernel{1, 1}, strides{1, 1}, padding{0, 0};
};
template <typename T> Tensor<T> maxPool2d(const Tensor<T> &x, const PoolGeometry &g);
template <typename T> Tensor<T> avgPool2d(const Tensor<T> &x, const PoolGeometry &g);
template <typename T>
Tensor<T> maxPool2dGrad(const Tensor<T> &dy, const Tensor<T> &x, const PoolGeometry &g);
template <typename T>
Tensor<T> avgPool2dGrad(const Tensor<T> &dy, const Shape &inputShape,
                        const PoolGeometry &g);

// Normalization (NormKernels.cpp) ------------------------------------------
/// Training-mode batch norm: {output, batch mean, 1/sqrt(var + eps)}.
template <typename T>
std::array<Tensor<T>, 3> batchNorm(const Tensor<T> &x, const Tensor<T> &gamma,
                                   const Tensor<T> &beta, double epsilon, bool relu);
template <typename T>
Tensor<T> batchNormInference(const Tensor<T> &x, const Tensor<T> &gamma,
                             const Tensor<T> &beta, const Tensor<T> &mean,
                             const Tensor<T> &variance, double epsilon);
/// New running mean and (unbiased) variance; `count`: values per channel.
template <typename T>
std::array<Tensor<T>, 2> batchNormRunningStats(const Tensor<T> &runningMean,
                                               const Tensor<T> &runningVar,
                                               const Tensor<T> &mean, const Tensor<T> &invStd,
                                               double momentum, double epsilon, double count);
/// `reluOutput` (the fused op's output) masks `dy` when given.
template <typename T>
std::array<Tensor<T>, 3>
batchNormGrad(const Tensor<T> &dy, const Tensor<T> *reluOutput, const Tensor<T> &x,
              const Tensor<T> &gamma, const Tensor<T> &mean, const Tensor<T> &invStd);
template <typename T>
std::array<Tensor<T>, 3> layerNorm(const Tensor<T> &x, const Tensor<T> &gamma,
                                   const Tensor<T> &beta, double epsilon);
template <typename T>
std::array<Tensor<T>, 3> layerNormGrad(const Tensor<T> &dy, const Tensor<T> &x,
                                       const Tensor<T> &gamma, const Tensor<T> &mean,
                                       const Tensor<T> &rstd);
template <typename T>
std::array<Tensor<T>, 2> rmsNorm(const Tensor<T> &x, const Tensor<T> &gamma, double epsilon);
template <typename T>
std::array<Tensor<T>, 2> rmsNormGrad(const Tensor<T> &dy, const Tensor<T> &x,
                                     const Tensor<T> &gamma, const Tensor<T> &rstd);

// Attention (AttentionKernels.cpp) ------------------------------------------
template <typename T>
Tensor<T> attention(const Tensor<T> &q, const Tensor<T> &k, const Tensor<T> &v, double scale,
                    bool causal);
/// {d query, d key, d value}.
template <typename T>
std::array<Tensor<T>, 3> attentionGrad(const Tensor<T> &dy, const Tensor<T> &q,
                                       const Tensor<T> &k, const Tensor<T> &v, double scale,
                                       bool causal);

// Softmax, losses, embeddings (LossKernels.cpp) -----------------------------
template <typename T>
Tensor<T> softmax(const Tensor<T> &x, int64_t axis, double scale, bool causal);
template <typename T>
Tensor<T> softmaxGrad(const Tensor<T> &dy, const Tensor<T> &y, int64_t axis, double scale);
template <typename T>
Tensor<T> crossEntropy(const Tensor<T> &logits, const Tensor<int64_t> &labels);
template <typename T>
Tensor<T> crossEntropyGrad(const Tensor<T> &dloss, const Tensor<T> &logits,
                           const Tensor<int64_t> &labels);
/// With `members` > 1 the table is shard `member` of a vocabulary split
/// by rows (het.embedding's vocab_shard): other rows look up zeros and
/// take no gradient.
template <typename T>
Tensor<T> embedding(const Tensor<T> &table, const Tensor<int64_t> &indices, int64_t member = 0,
                    int64_t members = 1);
template <typename T>
Tensor<T> embeddingGrad(const Tensor<T> &dy, const Tensor<int64_t> &indices,
                        const Shape &tableShape, int64_t member = 0, int64_t members = 1,
                        int64_t paddingIdx = -1);

// Mixture of experts (MoEKernels.cpp) ----------------------------------------
/// het.moe_router: the top `k` softmax probabilities of each row of
/// `logits` [T, E] (descending, lower expert first on ties), renormalized to
/// sum 1 when `normalize`; and their experts.
template <typename T> struct MoERouting {
  Tensor<T> weights;
  Tensor<int64_t> indices;
};
template <typename T> MoERouting<T> moeRouter(const Tensor<T> &logits, int64_t k, bool normalize);
template <typename T>
Tensor<T> moeRouterGrad(const Tensor<T> &dweights, const Tensor<T> &logits,
                        const Tensor<int64_t> &indices, bool normalize);
/// The row of its expert each choice of `indices` [T, k] takes (slot order
/// (j, t)), or -1 where the expert's `capacity` rows are taken; throws
/// KernelError for an expert outside [0, experts).
std::vector<int64_t> moeSlotRows(const Tensor<int64_t> &indices, int64_t experts,
                                 int64_t capacity);
/// `dropped`, when given, gets the number of choices past the capacity.
template <typename T>
Tensor<T> moeDispatch(const Tensor<T> &x, const Tensor<int64_t> &indices, const Tensor<T> *weights,
                      const Shape &resultShape, int64_t *dropped = nullptr);
template <typename T>
Tensor<T> moeCombine(const Tensor<T> &expertOutput, const Tensor<int64_t> &indices,
                     const Tensor<T> *weights);
template <typename T>
Tensor<T> moeSlotGrad(const Tensor<T> &tokens, const Tensor<T> &expertRows,
                      const Tensor<int64_t> &indices);
template <typename T>
Tensor<T> moeExpertFraction(const Tensor<int64_t> &indices, int64_t experts);
/// Each expert's filled rows: its choices in `indices` that a capacity of
/// `capacity` keeps (min(count, capacity)).
std::vector<int64_t> moeFilledRows(const Tensor<int64_t> &indices, int64_t experts,
                                   int64_t capacity);
/// het.moe_to_experts / het.moe_from_experts over a group of one member
/// (every expert here): the filled rows of `rows` [E, C, X] into
/// [E, capacity, X] with their counts, and back.
template <typename T>
std::pair<Tensor<T>, Tensor<int64_t>> moeToExpertsHere(const Tensor<T> &rows,
                                                       const Tensor<int64_t> &indices,
                                                       int64_t capacity);
template <typename T>
Tensor<T> moeFromExpertsHere(const Tensor<T> &expertRows, const Tensor<int64_t> &indices,
                             int64_t capacity);
template <typename T>
Tensor<T> moeExpertMatmul(const Tensor<T> &rows, const Tensor<T> &weight,
                          const Tensor<int64_t> &indices, bool transposeRhs);
template <typename T>
Tensor<T> moeExpertWeightGrad(const Tensor<T> &rows, const Tensor<T> &dy,
                              const Tensor<int64_t> &indices, bool transposeResult);


// Reductions and layout (LayoutKernels.cpp) ---------------------------------
template <typename T>
Tensor<T> reduceSum(const Tensor<T> &x, const std::vector<int64_t> &axes, bool keepDims,
                    bool mean);
template <typename T> Tensor<T> transpose(const Tensor<T> &x, const std::vector<int64_t> &perm);
template <typename T>
Tensor<T> reduceMax(const Tensor<T> &x, const std::vector<int64_t> &axes, bool keepDims);
template <typename T> Tensor<T> concat(const std::vector<const Tensor<T> *> &inputs, int64_t axis);
/// The strided ranges [starts[i], ends[i]) by steps[i] along axes[i].
template <typename T>
Tensor<T> slice(const Tensor<T> &x, const std::vector<int64_t> &axes,
                const std::vector<int64_t> &starts, const std::vector<int64_t> &ends,
                const std::vector<int64_t> &steps);
/// Zeros of `shape` with `dy` at the positions slice() reads.
template <typename T>
Tensor<T> sliceGrad(const Tensor<T> &dy, const std::vector<int64_t> &axes,
                    const std::vector<int64_t> &starts, const std::vector<int64_t> &steps,
                    const Shape &shape);

// Randomness (RandomKernels.cpp) ---------------------------------------------
template <typename T>
Tensor<T> dropout(const Tensor<T> &x, double p, int64_t seed, int64_t stream,
                  const RandomContext &random);

// Optimizers (OptimizerKernels.cpp) ------------------------------------------
struct SgdOptions {
  double lr = 0, momentum = 0, weightDecay = 0;
  bool nesterov = false;
};
template <typename T>
std::array<Tensor<T>, 2> sgd(const Tensor<T> &param, const Tensor<T> &grad,
                             const Tensor<T> &buffer, const SgdOptions &o);
struct AdamOptions {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, weightDecay = 0;
  bool decoupled = false;
};
template <typename T>
std::array<Tensor<T>, 3> adam(const Tensor<T> &param, const Tensor<T> &grad,
                              const Tensor<T> &expAvg, const Tensor<T> &expAvgSq,
                              int64_t step, const AdamOptions &o);

} // namespace het::eval

#endif // HET_LIB_EVAL_KERNELS_H
