//===- RandomContext.h - the counters of het's random ops ----------*- C++ -*-===//
//
// What a runtime tells the random ops (het.dropout) besides their
// attributes: the training step and where the tensor's samples sit in the
// step's whole batch. MLIR-free: the evaluator and libhetrt share it.
//
//===----------------------------------------------------------------------===//

#ifndef HET_EVAL_RANDOMCONTEXT_H
#define HET_EVAL_RANDOMCONTEXT_H

#include <cstdint>

namespace het::eval {

struct RandomContext {
  int64_t step = 0;        // the training step (0-based)
  int64_t firstSample = 0; // index of the tensor's first sample in the step's batch
};

} // namespace het::eval

#endif
