#include "PointToPoint.h"

#include "Errors.h"
#include "Tensors.h"

#include <c10/util/Exception.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace het::torchccl {

PointToPoint::PointToPoint(c10::intrusive_ptr<c10d::Store> store, int rank, int size, const hetcclConfig_t& config,
                           std::string root)
    : store_(std::move(store)), rank_(rank), size_(size), config_(config), root_(std::move(root)) {}

PointToPoint::~PointToPoint() {
  for (auto& [key, ch] : channels_) ch->queue.reset(); // lets queued transfers finish
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, ch] : channels_)
    if (ch->comm) hetcclCommDestroy(ch->comm);
}

void PointToPoint::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) return;
  aborted_ = true;
  for (auto& [key, ch] : channels_)
    if (ch->comm) hetcclCommRevoke(ch->comm);
}

PointToPoint::Channel& PointToPoint::channel(int peer, bool outgoing) {
  TORCH_CHECK_VALUE(peer >= 0 && peer < size_, "hetccl ", outgoing ? "send" : "recv", ": peer rank ", peer,
                    " is not in this group of ", size_);
  TORCH_CHECK_VALUE(peer != rank_, "hetccl ", outgoing ? "send" : "recv", ": peer rank ", peer,
                    " is this rank itself");
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = channels_[{peer, outgoing}];
  if (!slot) {
    slot = std::make_unique<Channel>();
    slot->peer = peer;
    slot->outgoing = outgoing;
    slot->queue = std::make_unique<SerialQueue>("hetccl p2p channel");
  }
  return *slot;
}

// Runs on the channel's own thread, so a receiver waiting for its sender's
// id in the store blocks nobody else.
void PointToPoint::connect(Channel& ch) {
  int src = ch.outgoing ? rank_ : ch.peer, dst = ch.outgoing ? ch.peer : rank_;
  std::string key = "hetccl/p2p/" + std::to_string(src) + "->" + std::to_string(dst);
  hetcclUniqueId id;
  if (ch.outgoing) {
    check(hetcclGetUniqueIdAt(&id, root_.c_str()), nullptr, "send: making the channel's id");
    store_->set(key, std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal));
  } else {
    // Poll: a blocking get would hold the store client's lock until the
    // sender has set the key, and that sender's process may itself be
    // waiting to set the id of the opposite channel through its client:
    // with both ranks receiving first, neither set would ever go through.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.timeoutMs > 0 ? config_.timeoutMs : 300000);
    std::chrono::microseconds pause(50);
    while (!store_->check({key})) {
      TORCH_CHECK(std::chrono::steady_clock::now() < deadline, "hetccl recv from rank ", ch.peer,
                  ": its channel id did not arrive within ", config_.timeoutMs, " ms; did rank ", ch.peer,
                  " call send?");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(10000));
    }
    std::vector<uint8_t> bytes = store_->get(key);
    TORCH_CHECK(bytes.size() == sizeof id.internal, "hetccl recv: the channel id in the store has ", bytes.size(),
                " bytes, not ", sizeof id.internal);
    memcpy(id.internal, bytes.data(), bytes.size());
  }
  hetcclComm_t comm = nullptr;
  check(hetcclCommInitRank(&comm, 2, id, ch.outgoing ? 0 : 1, &config_), nullptr,
        std::string(ch.outgoing ? "send to rank " : "recv from rank ") + std::to_string(ch.peer) +
            ": connecting the channel");
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) {
    hetcclCommDestroy(comm);
    check(hetcclAborted, nullptr, "connecting a channel after the group was aborted");
  }
  ch.comm = comm;
}

c10::intrusive_ptr<HetcclWork> PointToPoint::send(const at::Tensor& tensor, int peer) {
  checkDense(tensor, "send");
  Channel& ch = channel(peer, true);
  HostTensor h(tensor);
  auto work = c10::make_intrusive<HetcclWork>(rank_, c10d::OpType::SEND, "hetccl:send",
                                              std::vector<at::Tensor>{tensor});
  ch.queue->push(work, [this, &ch, h] {
    if (!ch.comm) connect(ch);
    check(hetcclSend(h.data(), h.bytes(), kBytes, 1, ch.comm), ch.comm,
          "send to rank " + std::to_string(ch.peer));
  });
  return work;
}

c10::intrusive_ptr<HetcclWork> PointToPoint::recv(const at::Tensor& tensor, int peer) {
  checkDense(tensor, "recv");
  Channel& ch = channel(peer, false);
  HostTensor h = HostTensor::forOutput(tensor);
  auto work = c10::make_intrusive<HetcclWork>(rank_, c10d::OpType::RECV, "hetccl:recv",
                                              std::vector<at::Tensor>{tensor});
  ch.queue->push(work, [this, &ch, h] {
    if (!ch.comm) connect(ch);
    check(hetcclRecv(h.data(), h.bytes(), kBytes, 0, ch.comm), ch.comm,
          "recv from rank " + std::to_string(ch.peer));
    h.writeBack();
  });
  return work;
}

} // namespace het::torchccl
