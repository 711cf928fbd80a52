//===- RandomState.cpp - the counters the random kernels read -------------===//

#include "RandomState.h"

het::eval::RandomContext &hetrtRandomContext() {
  static het::eval::RandomContext context;
  return context;
}
