//===- Checkpointer.h - asynchronous, incremental checkpoints ---*- C++ -*-===//
//
// The training loop calls save(step, snapshot) with a snapshot it no longer
// needs (moved in: the copy of the parameters is the loop's only cost). In
// async mode a background thread hashes and writes it while training goes
// on; at most one save waits behind the one being written, so a loop that
// checkpoints faster than the disk allows is slowed down (back-pressure)
// instead of queuing unbounded copies of its state.
//
// Every `fullEvery`-th save (and the first one) is full; the others store
// only the tensors whose content hash differs from the last full one, so a
// restore is always that full checkpoint plus at most one increment.
//
#ifndef HET_CHECKPOINT_CHECKPOINTER_H
#define HET_CHECKPOINT_CHECKPOINTER_H

#include "het/Checkpoint/Store.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace het::ckpt {

class Checkpointer {
public:
  struct Options {
    std::string dir;
    bool async = true;
    int fullEvery = 4; // 1: every checkpoint is full
  };

  explicit Checkpointer(Options options);
  /// Waits for queued saves; never throws (a pending error is printed).
  ~Checkpointer();
  Checkpointer(const Checkpointer &) = delete;
  Checkpointer &operator=(const Checkpointer &) = delete;

  /// Async: returns once the snapshot is queued (blocks while one save is
  /// already waiting). Sync: returns once it is durable. Rethrows the error
  /// of an earlier failed background save.
  void save(int64_t step, Snapshot snapshot);
  /// Blocks until every queued save is durable; rethrows a writer error.
  void wait();
  /// Info about the saves completed so far, in order.
  std::vector<SaveInfo> completed();

private:
  void writerLoop();
  SaveInfo writeOne(int64_t step, const Snapshot &snap);
  void rethrowLocked();

  Options opts_;
  // State of the incremental chain (touched only by the thread that writes).
  int saves_ = 0;
  int64_t fullStep_ = -1;
  HashMap fullHashes_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<int64_t, Snapshot>> queue_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::vector<SaveInfo> done_;
  std::thread writer_;
};

} // namespace het::ckpt

#endif
