//===- ModelInfo.h - the calling convention of a compiled model ----*- C++ -*-===//
//
// het-compile embeds `het_model_info`, a text the runtime reads back:
//   het-model 1
//   step <function> <inputs> <outputs>
//   in <name> <f32|i64> <rank> <sizes...> <role> <init...>   (per input)
//   out <name> <f32|i64> <rank> <sizes...>                    (per output)
//   predict <function> <inputs> 1                             (optional)
//   in <name>                                                 (per input)
//   out logits f32 <rank> <sizes...>
// Roles: data, label, index, param, state. Inits: `zeros`, `randint B`,
// `uniform LO HI`, `normal` (as het-eval --random-inputs draws them).
//
// A pipeline (het-compile --cluster; version 2) has the step lines of the
// unpartitioned step (so every rank initializes arguments exactly as a
// single-rank run would), then:
//   pipeline <stages> <micro-batches>
//   group <name> <count>         (per device group, in the cluster's order)
//   predicted <seconds>          (optional: the plan's iteration time)
//   stage <j> <name> <replicas> <group> <vendor> <arch> <library> <begin> <end>
//   order <j> F0 F1 B0 ...
//   function <j> <forward|backward|update> <symbol> <inputs> <outputs> <receives>
//   in <name> <f32|i64> <rank> <sizes...>                     (per input)
//   out <name> <f32|i64> <rank> <sizes...>                    (per output)
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_MODELINFO_H
#define HET_LIB_RUNTIME_MODELINFO_H

#include <cstdint>
#include <string>
#include <vector>

namespace het::rt {

struct TensorInfo {
  std::string name;
  bool isInteger = false;
  std::vector<int64_t> shape;
  std::string role, init; // inputs of the step only
  double a = 0, b = 0;    // randint bound / uniform range
  int64_t count() const;
};

/// One of a stage's three functions (convert-het-to-runtime).
struct StageFunction {
  std::string symbol;
  std::vector<TensorInfo> inputs, outputs;
  int receives = 0; // hetrt_recv calls per run
};

struct StageInfo {
  std::string name, group, vendor, arch, library;
  int replicas = 1;
  long layerBegin = 0, layerEnd = 0;
  std::vector<std::string> order; // "F<i>" / "B<i>"
  StageFunction forward, backward, update;
};

struct ModelInfo {
  int version = 1;
  int microBatches = 1;
  double predictedSeconds = 0; // the planner's iteration time, 0: unknown
  std::vector<std::pair<std::string, int>> groups; // device groups, cluster order
  std::vector<StageInfo> stages; // a pipeline (version 2) only
  std::string stepName;
  std::vector<TensorInfo> inputs, outputs;
  std::string predictName;
  std::vector<std::string> predictInputs; // names of step inputs
  TensorInfo logits;
  bool hasPredict() const { return !predictName.empty(); }
};

/// Parses the embedded text; on failure returns false and sets `error`.
bool parseModelInfo(const char *text, ModelInfo &info, std::string &error);

} // namespace het::rt

#endif
