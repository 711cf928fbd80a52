// Asynchronous collectives over hetccl's blocking calls: every call returns a
// Work at once, and a thread of the backend runs the calls in the order they
// were issued (the order every rank issues them in). The Work's future
// completes with the output tensors, which is what DDP's bucketed overlap
// and comm hooks wait on.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace het::torchccl {

class HetcclWork : public c10d::Work {
public:
  HetcclWork(int rank, c10d::OpType type, const char* profilingTitle, std::vector<at::Tensor> outputs);

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // Runs `body` and completes the work with its outcome: the future gets the
  // outputs or the exception, and wait() returns or rethrows it.
  void run(const std::function<void()>& body);

private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// Completes when every one of `parts` has (coalesced point-to-point calls).
class AllOfWork : public c10d::Work {
public:
  AllOfWork(int rank, std::vector<c10::intrusive_ptr<c10d::Work>> parts);
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  bool wait(std::chrono::milliseconds timeout) override;
  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

private:
  std::vector<c10::intrusive_ptr<c10d::Work>> parts_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// One thread that runs jobs first in, first out. The destructor lets the
// queued jobs finish (abort the communicator first to make them end at once).
class SerialQueue {
public:
  explicit SerialQueue(std::string name);
  ~SerialQueue();
  SerialQueue(const SerialQueue&) = delete;
  SerialQueue& operator=(const SerialQueue&) = delete;

  void push(c10::intrusive_ptr<HetcclWork> work, std::function<void()> body);
  // Blocks until every job pushed so far has run.
  void drain();

private:
  void loop();

  std::string name_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::pair<c10::intrusive_ptr<HetcclWork>, std::function<void()>>> jobs_;
  bool busy_ = false, stopping_ = false;
  std::thread thread_;
};

} // namespace het::torchccl
