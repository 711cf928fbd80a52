//===- LearningRate.h - the learning rate of each step ----------*- C++ -*-===//
//
// A compiled step reads its learning rate from the runtime each time it
// updates (hetrt_learning_rate, called with the rate given to
// het-compile): the executable's --lr replaces that rate, and a schedule
// scales it step by step, as language-model training does -- a linear
// warm-up, then a cosine (or linear) decay to --min-lr, the shape of
// nanoGPT's get_lr and of PyTorch's LambdaLR with that function. The rate
// is a function of the step number alone, so a resumed or re-planned run
// continues the schedule where its checkpoint left it.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_LEARNINGRATE_H
#define HET_LIB_RUNTIME_LEARNINGRATE_H

#include <string>

namespace het::rt {

class OptionReader;

/// The --help lines of the schedule's options (both executables).
#define HETRT_LEARNING_RATE_USAGE                                                                \
  "  --lr X                learning rate (default: the one given to het-compile)\n"              \
  "  --lr-schedule S       constant (default), cosine or linear: after --warmup-steps\n"         \
  "                        the rate decays from --lr to --min-lr at --decay-steps\n"             \
  "  --warmup-steps W      the first W steps rise linearly: step s trains at\n"                  \
  "                        lr x (s+1)/(W+1) (default 0)\n"                                       \
  "  --decay-steps D       the step the decay ends at (default: --steps)\n"                      \
  "  --min-lr X            the rate at and after --decay-steps (default 0)\n"

struct LearningRateSchedule {
  std::string kind = "constant"; // constant | cosine | linear
  long long warmupSteps = 0;
  long long decaySteps = 0; // 0: the run's last step (--steps)
  double minLr = 0;
  double base = -1; // --lr; negative: the rate compiled into the step

  /// The rate of step `step` (0-based), `compiled` being het-compile's.
  double at(double compiled, long long step) const;
};

/// Reads the option `options` is at if it is one of --lr, --lr-schedule,
/// --warmup-steps, --decay-steps, --min-lr; false if it is another.
bool readLearningRateOption(const OptionReader &options, LearningRateSchedule &schedule);

/// What hetrt_learning_rate answers from now on: `schedule` (checked; an
/// error exits naming the option), its decay ending at `steps` unless it
/// says otherwise. Returns a line describing it for the log, or "" for a
/// constant rate.
std::string useLearningRate(LearningRateSchedule schedule, long long steps);

/// The step whose updates run next.
void setLearningRateStep(long long step);

} // namespace het::rt

#endif // HET_LIB_RUNTIME_LEARNINGRATE_H
