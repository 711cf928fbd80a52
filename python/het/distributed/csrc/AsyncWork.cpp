#include "AsyncWork.h"

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>

namespace het::torchccl {

static c10::intrusive_ptr<c10::ivalue::Future> tensorListFuture() {
  return c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
}

HetcclWork::HetcclWork(int rank, c10d::OpType type, const char* profilingTitle, std::vector<at::Tensor> outputs)
    : Work(rank, type, profilingTitle), outputs_(std::move(outputs)), future_(tensorListFuture()) {}

void HetcclWork::run(const std::function<void()>& body) {
  std::exception_ptr error;
  try {
    body();
  } catch (...) {
    error = std::current_exception();
  }
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(error);
}

AllOfWork::AllOfWork(int rank, std::vector<c10::intrusive_ptr<c10d::Work>> parts)
    : Work(rank, c10d::OpType::COALESCED), parts_(std::move(parts)), future_(tensorListFuture()) {
  c10::List<c10::intrusive_ptr<c10::ivalue::Future>> futures(
      c10::FutureType::create(c10::ListType::create(c10::TensorType::get())));
  for (auto& p : parts_) futures.push_back(p->getFuture());
  if (futures.empty()) {
    future_->markCompleted(c10::IValue(std::vector<at::Tensor>{}));
    return;
  }
  auto all = c10::collectAll(futures);
  all->addCallback([future = future_, parts = parts_](c10::ivalue::Future& done) {
    if (done.hasError()) {
      future->setError(done.exception_ptr());
      return;
    }
    for (auto& p : parts)
      if (p->exception()) {
        future->setError(p->exception());
        return;
      }
    std::vector<at::Tensor> outputs;
    for (auto& p : parts)
      for (auto& t : p->result()) outputs.push_back(t);
    future->markCompleted(c10::IValue(outputs));
  });
}

bool AllOfWork::isCompleted() {
  for (auto& p : parts_)
    if (!p->isCompleted()) return false;
  return true;
}

bool AllOfWork::isSuccess() const {
  for (auto& p : parts_)
    if (!p->isSuccess()) return false;
  return true;
}

std::exception_ptr AllOfWork::exception() const {
  for (auto& p : parts_)
    if (auto e = p->exception()) return e;
  return nullptr;
}

bool AllOfWork::wait(std::chrono::milliseconds timeout) {
  for (auto& p : parts_) p->wait(timeout);
  return true;
}

std::vector<at::Tensor> AllOfWork::result() {
  std::vector<at::Tensor> outputs;
  for (auto& p : parts_)
    for (auto& t : p->result()) outputs.push_back(t);
  return outputs;
}

SerialQueue::SerialQueue(std::string name) : name_(std::move(name)), thread_([this] { loop(); }) {}

SerialQueue::~SerialQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void SerialQueue::push(c10::intrusive_ptr<HetcclWork> work, std::function<void()> body) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(!stopping_, "hetccl: ", name_, " is shutting down");
    jobs_.emplace_back(std::move(work), std::move(body));
  }
  wake_.notify_one();
}

void SerialQueue::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return jobs_.empty() && !busy_; });
}

void SerialQueue::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return; // stopping, and everything queued has run
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lock.unlock();
    job.first->run(job.second);
    job = {};
    lock.lock();
    busy_ = false;
    if (jobs_.empty()) idle_.notify_all();
  }
}

} // namespace het::torchccl
