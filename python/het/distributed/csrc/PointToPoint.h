// send/recv on channels of their own. Each direction between this rank and a
// peer (to it, from it) is a two-rank hetccl communicator with its own
// thread, connected the first time it is used (the sender makes the id and
// leaves it in the c10d store; the receiver picks it up). A send therefore
// never waits behind a receive or a collective: both ranks may isend before
// they irecv, as Gloo allows, at any size. Messages in one direction arrive
// in the order they were sent; tags are not matched.
#pragma once

#include "AsyncWork.h"

#include "het-c/hetccl.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace het::torchccl {

class PointToPoint {
public:
  // `root` is "address:0": where a channel's sending end listens.
  PointToPoint(c10::intrusive_ptr<c10d::Store> store, int rank, int size, const hetcclConfig_t& config,
               std::string root);
  ~PointToPoint();

  c10::intrusive_ptr<HetcclWork> send(const at::Tensor& tensor, int peer);
  c10::intrusive_ptr<HetcclWork> recv(const at::Tensor& tensor, int peer);
  // Ends every transfer in flight with hetcclAborted (from any thread).
  void abort();

private:
  struct Channel {
    int peer;
    bool outgoing;
    hetcclComm_t comm = nullptr;
    std::unique_ptr<SerialQueue> queue;
  };
  Channel& channel(int peer, bool outgoing);
  void connect(Channel& ch);

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_, size_;
  hetcclConfig_t config_;
  std::string root_;
  std::mutex mutex_; // guards channels_ and each channel's comm pointer
  bool aborted_ = false;
  std::map<std::pair<int, bool>, std::unique_ptr<Channel>> channels_;
};

} // namespace het::torchccl
