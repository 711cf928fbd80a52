//===- Checkpointer.cpp - asynchronous, incremental checkpoints -----------===//
#include "het/Checkpoint/Checkpointer.h"
#include "het/Checkpoint/AtomicFile.h"

#include <cstdio>

namespace het::ckpt {

Checkpointer::Checkpointer(Options options) : opts_(std::move(options)) {
  if (opts_.dir.empty()) throw CheckpointError("checkpoint directory is empty");
  if (opts_.fullEvery < 1) throw CheckpointError("fullEvery must be >= 1");
  makeDirs(opts_.dir);
  // Temp files of a writer that crashed are garbage; they were never visible.
  removeStaleTempFiles(opts_.dir);
  if (opts_.async) writer_ = std::thread([this] { writerLoop(); });
}

Checkpointer::~Checkpointer() {
  {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return queue_.empty() && !busy_; });
    stop_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  if (error_) {
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "checkpoint: a background save failed: %s\n", e.what());
    }
  }
}

void Checkpointer::rethrowLocked() {
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

SaveInfo Checkpointer::writeOne(int64_t step, const Snapshot &snap) {
  bool full = saves_ % opts_.fullEvery == 0 || fullStep_ < 0;
  ++saves_;
  if (full) {
    SaveInfo info = writeCheckpoint(opts_.dir, step, snap, -1, nullptr, &fullHashes_);
    fullStep_ = step;
    return info;
  }
  return writeCheckpoint(opts_.dir, step, snap, fullStep_, &fullHashes_);
}

void Checkpointer::save(int64_t step, Snapshot snapshot) {
  if (!opts_.async) {
    SaveInfo info = writeOne(step, snapshot);
    std::lock_guard<std::mutex> lk(mu_);
    done_.push_back(info);
    return;
  }
  std::unique_lock<std::mutex> lk(mu_);
  rethrowLocked();
  // Back-pressure: one snapshot may wait behind the one being written.
  cv_.wait(lk, [&] { return queue_.empty() || error_; });
  rethrowLocked();
  queue_.emplace_back(step, std::move(snapshot));
  cv_.notify_all();
}

void Checkpointer::wait() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return (queue_.empty() && !busy_) || error_; });
  rethrowLocked();
}

std::vector<SaveInfo> Checkpointer::completed() {
  std::lock_guard<std::mutex> lk(mu_);
  return done_;
}

void Checkpointer::writerLoop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return; // stop_ and nothing left
    auto item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    cv_.notify_all(); // a save() waiting for room may queue the next one now
    lk.unlock();
    SaveInfo info;
    std::exception_ptr err;
    try {
      info = writeOne(item.first, item.second);
    } catch (...) {
      err = std::current_exception();
    }
    item.second = Snapshot(); // free the copy before taking the lock
    lk.lock();
    busy_ = false;
    if (err) {
      error_ = err;
      queue_.clear(); // later saves would build on a broken chain
    } else {
      done_.push_back(info);
    }
    cv_.notify_all();
  }
}

} // namespace het::ckpt
