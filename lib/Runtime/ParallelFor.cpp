//===- ParallelFor.cpp - generated loops on the runtime's threads ---------===//
//
// het-parallel-loops-to-runtime outlines the outermost parallel loop of a
// generated kernel into a task over a range of its iterations; this runs
// the task on the OpenMP threads oneDNN uses (the executable's --threads),
// each thread one contiguous share. Sharing oneDNN's pool matters: a
// second pool would spin or sleep while the first works, and on two cores
// either costs more than the loop. Every iteration is computed by exactly
// one thread with the same instructions, so results do not depend on the
// number of threads.
//
//===----------------------------------------------------------------------===//

#include "het-c/hetrt.h"

#include <omp.h>

#include <algorithm>

extern "C" void hetrt_parallel_for(int64_t iterations, hetrt_task task, int64_t context) {
  int threads = omp_get_max_threads();
  if (threads <= 1 || iterations < 2 || omp_in_parallel()) {
    task(0, iterations, context);
    return;
  }
  threads = static_cast<int>(std::min<int64_t>(threads, iterations));
#pragma omp parallel num_threads(threads)
  {
    int64_t thread = omp_get_thread_num();
    int64_t count = omp_get_num_threads();
    int64_t begin = iterations * thread / count;
    int64_t end = iterations * (thread + 1) / count;
    if (begin < end)
      task(begin, end, context);
  }
}
