//===- ModelDesc.h - what the cost model knows about each layer -*- C++ -*-===//
#ifndef HET_PLAN_MODELDESC_H
#define HET_PLAN_MODELDESC_H

#include <nlohmann/json_fwd.hpp>
#include <map>
#include <string>
#include <vector>

namespace het::plan {

/// One op's roofline inputs: FLOPs and activation bytes per sample, and the
/// bytes of the parameters it reads.
struct OpCost {
  double flops = 0, bytes = 0, weightBytes = 0;
};

/// One layer (all ops with the same het.layer). FLOPs and activation bytes
/// are per training sample, so they scale with the micro-batch size.
struct LayerDesc {
  std::string name;
  double fwdFlops = 0, bwdFlops = 0; // per sample
  double params = 0;                 // trainable elements
  /// Elements of each parameter tensor (IR models; empty otherwise): the
  /// runtime all-reduces gradients tensor by tensor, which measured
  /// collective times price call by call.
  std::vector<double> paramTensors;
  double ioBytes = 0;         // activation bytes read + written, per sample
  double outputBytes = 0;     // bytes sent to the next layer, per sample
  double stashBytes = 0;      // activations kept for the backward, per sample
  /// Of stashBytes, the results only later layers' backward reads (a relu
  /// output a next linear's gradient needs): a stage ending at this layer
  /// does not keep them (the next layer is taken to be the reader).
  double passedStashBytes = 0;
  /// Earlier layers' results that this layer's backward (or a later one's)
  /// reads: what a stage starting here receives and keeps.
  double inputStashBytes = 0;
  /// Activation gradients the layer's backward holds at once, per sample:
  /// its largest op's output and input gradients beside the gradient of
  /// the layer's output (a residual stream's). The backward's working set.
  double gradientBytes = 0;
  /// The four figures above as the layer trains under autocast to a 16-bit
  /// format (IR models: analysed after het-autocast; `analysed` false:
  /// the figures above at the format's width).
  struct LowPrecision {
    bool analysed = false;
    double stashBytes = 0, passedStashBytes = 0, inputStashBytes = 0, gradientBytes = 0;
  } lowPrecision;
  /// The four figures per rank of a layer split over two tensor-parallel
  /// devices (IR models: analysed after het-tensor-parallel at degree 2;
  /// `analysed` false: every figure splits). het splits the matrices, not
  /// the sequence: the residual stream, the norms' inputs and the inputs of
  /// column-split matrices stay whole on every rank, so a degree t holds
  /// that whole part and 1/t of the rest (tensorParallelShare).
  struct SplitInTwo {
    bool analysed = false;
    double stashBytes = 0, passedStashBytes = 0, inputStashBytes = 0, gradientBytes = 0;
  } splitInTwo;
  /// The four figures under selective recomputation (IR models: analysed
  /// after het-recompute's selective mode; `analysed` false: the planner
  /// cannot price it), and the forward work its backward does again per
  /// sample: FLOPs, and bytes read and written.
  struct Selective {
    bool analysed = false;
    double stashBytes = 0, passedStashBytes = 0, inputStashBytes = 0, gradientBytes = 0;
    double recomputedFlops = 0, recomputedBytes = 0;
  } selective;
  /// Step inputs per sample (data, labels, token ids) whose first reader
  /// is this layer: the runtime holds them for every micro-batch of a step.
  double dataBytes = 0;
  /// The f32 [.., Q, K] probabilities of the layer's het.attention ops, per
  /// sample (IR models): not in stashBytes, because what a kind holds of
  /// them depends on how its kernels run attention (CostModel::table).
  double attentionProbabilityBytes = 0;
  /// A mixture-of-experts layer (IR models): what expert parallelism
  /// divides among a stage's replicas and what it moves between them.
  struct Experts {
    int count = 0;             // E; 0: no mixture of experts here
    double params = 0;         // elements of the experts' weights
    double fwdFlops = 0, bwdFlops = 0; // the experts' products, per sample
    /// Bytes of one exchange (het.moe_to_experts or moe_from_experts) of
    /// one sample's filled rows: tokens x top-k x features x element.
    double exchangeBytes = 0;
  } experts;
  bool tensorParallel = true; // whether its matrices split over a TP group
  /// When known (from IR, het-tensor-parallel's analysis), how the layer
  /// fares at each degree > 1: 's' its matrices split, 'r' nothing of it
  /// splits (replicated on every device), 'p' the degree does not fit (it
  /// does not divide the attention heads). Unknown degrees: 's'.
  std::map<int, char> tensorParallelStatus;
  char statusAt(int degree) const;
  /// When known (from IR), the layer's ops: the roofline is applied per op
  /// (a memory-bound op next to a compute-bound one costs both), and
  /// `fwdFlops`/`ioBytes` are their sums. `bwdOps` empty: the backward is
  /// each forward op at twice the FLOPs and bytes.
  std::vector<OpCost> fwdOps, bwdOps;
  /// Kernels a forward and a backward of the layer launch (each pays the
  /// device's fixed kernel overhead): the ops' count from IR (a backward
  /// without its own ops: two per forward op), `kernels` in a model JSON
  /// (backward twice that), ten per GPT block.
  int fwdKernels = 1, bwdKernels = 2;
};

struct ModelDesc {
  std::string name, file;
  std::string dtype = "fp32"; // the compute dtype (picks the peak FLOP/s)
  int bytesPerElement = 4;
  long batch = 0; // the batch the model was written for (IR), 0 if none
  std::vector<LayerDesc> layers;
  /// A parameter read by several layers (tied weights: GPT-2's token
  /// embedding and output head), counted in its first layer's params.
  struct Tie {
    std::vector<int> layers; // ascending
    double elements = 0;
    /// Whether a stage over layers [b, e) reads it.
    bool readIn(int b, int e) const;
    /// Whether such a stage holds a copy beyond its own layers' params
    /// (the tie's first layer, which counts it, is in an earlier stage).
    bool copiedInto(int b, int e) const { return layers.front() < b && readIn(b, e); }
  };
  std::vector<Tie> ties;

  double totalParams() const;
  /// Whether a stage over layers [b, e) holds each tie's layers all or
  /// none (else it keeps a copy of the parameter, summed with the other
  /// holders' once per step: het-partition's tied groups).
  bool keepsTiedLayers(int b, int e) const;
  /// Elements of tied parameters a stage over [b, e) holds a copy of
  /// beyond its layers' params: those whose first layer is before b.
  double tiedCopyElements(int b, int e) const;
  /// Elements of tied parameters a stage over [b, e) sums with another
  /// stage's copies once per step (some of their layers lie outside).
  double tiedExchangeElements(int b, int e) const;
  /// tensorParallelFits, and a tied parameter's copies kept whole: a stage
  /// with tensor-parallel devices holds all of a tie's layers or none (a
  /// stage het-compile builds).
  bool stageFits(int b, int e, int degree) const {
    return tensorParallelFits(b, e, degree) && (degree <= 1 || keepsTiedLayers(b, e));
  }
  /// Whether a stage over layers [b, e) can take `degree` tensor-parallel
  /// devices: no layer there with a degree that does not fit, and at least
  /// one that splits (else every device would repeat the same work).
  bool tensorParallelFits(int b, int e, int degree) const;
  /// Whether the planner can price selective recomputation: every layer's
  /// figures under it were analysed (IR models).
  bool pricesSelective() const;
};

/// A GPT-style decoder (embedding, `blocks` transformer blocks, head) with
/// the standard per-block counts: 24*s*h^2 + 4*s^2*h forward FLOPs, 12*h^2
/// parameters, and Korthikanti et al.'s 34*s*h + 5*a*s^2 stashed bytes (fp16,
/// no recomputation), all per sample.
ModelDesc makeGptModel(const std::string &name, int blocks, int hidden,
                       int heads, int seq, int vocab,
                       const std::string &dtype = "bf16");

/// The same decoder with LLaMA's variations (all optional, GPT's defaults):
/// grouped-query attention (`kvHeads` < heads: smaller K and V), a gated
/// MLP (SwiGLU: three matrices of `ffnHidden`), no biases and RMS norms
/// (`biases` false), and FlashAttention (no [a, s, s] scores stashed). The
/// counts generalize the GPT ones term by term: parameters 2h^2 + 2h^2 kv/a
/// + (2 or 3) h f per block; stash (16-bit) (11 + 4 kv/a) s h + 5 a s^2
/// (without FlashAttention) + 3 s h + (4 or 6) s f.
struct DecoderShape {
  int blocks = 1, hidden = 1, heads = 1, seq = 1, vocab = 1;
  int kvHeads = 0;   // 0: heads
  int ffnHidden = 0; // 0: 4 * hidden
  bool gatedMlp = false, biases = true, flashAttention = false;
  std::string dtype = "bf16";
};
ModelDesc makeDecoderModel(const std::string &name, const DecoderShape &shape);

/// A model description in JSON: either {"gpt": {...}} (the generator above)
/// or {"layers": [...]} with the LayerDesc fields.
ModelDesc loadModelJson(const std::string &path);
ModelDesc parseModelJson(const nlohmann::json &j, const std::string &file);
nlohmann::json modelToJson(const ModelDesc &model);

} // namespace het::plan

#endif
