//===- RandomState.h - the counters the random kernels read -----*- C++ -*-===//
//
// het.dropout's mask depends on the training step and on where the
// tensor's samples sit in the step's whole batch. The drivers (Main.cpp for
// one process, PipelineMain.cpp for a pipeline rank) set these before each
// call of generated code; the dropout kernel reads them.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_RANDOMSTATE_H
#define HET_LIB_RUNTIME_RANDOMSTATE_H

#include "het/Eval/RandomContext.h"

/// This process's counters (one training loop per process).
het::eval::RandomContext &hetrtRandomContext();

#endif
