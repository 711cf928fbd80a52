//===- SampleOrder.cpp - the order an epoch visits samples in -------------===//

#include "SampleOrder.h"

#include "Arguments.h"
#include "Philox.h"

#include <cerrno>
#include <cstring>

#include <array>

namespace het::rt {

uint64_t permuteSample(uint64_t x, uint64_t n, uint64_t seed, uint64_t epoch) {
  int bits = 2;
  while ((uint64_t(1) << bits) < n)
    bits += 2;
  const int half = bits / 2;
  const uint64_t mask = (uint64_t(1) << half) - 1;
  std::array<uint32_t, 2> key{uint32_t(seed) ^ uint32_t(seed >> 32), 0x70CE0000u ^ uint32_t(epoch)};
  do {
    uint64_t left = x >> half, right = x & mask;
    for (uint32_t round = 0; round < 4; ++round) {
      eval::PhiloxWords w =
          eval::philox4x32({uint32_t(right), uint32_t(right >> 32), round, uint32_t(epoch >> 32)},
                           key);
      uint64_t f = (uint64_t(w[0]) | uint64_t(w[1]) << 32) & mask;
      uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= n);
  return x;
}

SampleLog::~SampleLog() {
  if (file_)
    std::fclose(file_);
}

void SampleLog::open(const std::string &path, int rank) {
  file_ = std::fopen(path.c_str(), "a");
  if (!file_)
    die("--log-samples " + path + ": " + std::strerror(errno));
  std::setvbuf(file_, nullptr, _IOLBF, 0);
  rank_ = rank;
}

void SampleLog::sample(uint64_t g, const char *what, uint64_t value) const {
  if (file_)
    std::fprintf(file_, "step %lld sample %llu %s %llu rank %d\n", static_cast<long long>(step_),
                 static_cast<unsigned long long>(g), what, static_cast<unsigned long long>(value),
                 rank_);
}

ReadAhead::ReadAhead(std::function<void(int64_t, int64_t)> read) : read_(std::move(read)) {
  worker_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return pending_ || stop_; });
      if (stop_)
        return;
      int64_t first = wantFirst_, count = wantCount_;
      pending_ = false;
      lock.unlock();
      read_(first, count);
      lock.lock();
    }
  });
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

void ReadAhead::request(int64_t first, int64_t count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wantFirst_ = first;
    wantCount_ = count;
    pending_ = true;
  }
  wake_.notify_one();
}

} // namespace het::rt
