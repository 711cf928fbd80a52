// Monotonic time and deadlines. Every blocking wait in the library takes a
// Deadline so that no call can outlive the communicator's timeout.
#pragma once

#include <cstdint>
#include <ctime>

namespace hetccl {

inline int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Deadline {
  int64_t atNs;
  static Deadline afterMs(int64_t ms) { return Deadline{nowNs() + ms * 1000000}; }
  bool passed() const { return nowNs() >= atNs; }
  // Milliseconds left, clamped to [0, INT32_MAX] for poll().
  int msLeft() const {
    int64_t left = (atNs - nowNs()) / 1000000;
    if (left < 0) return 0;
    if (left > 0x7fffffff) return 0x7fffffff;
    return int(left);
  }
};

} // namespace hetccl
