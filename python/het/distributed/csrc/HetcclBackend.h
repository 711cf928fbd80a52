// The torch.distributed backend "hetccl": c10d's Backend interface over one
// hetccl communicator for the collectives (run in issue order on the
// backend's thread, see AsyncWork.h) and two-rank channels for send/recv
// (PointToPoint.h).
#pragma once

#include "AsyncWork.h"
#include "PointToPoint.h"

#include "het-c/hetccl.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <memory>

namespace het::torchccl {

struct Settings {
  std::chrono::milliseconds timeout{kBackendDefaultTimeout};
  hetcclAlgo_t algorithm = hetcclAlgoAuto;          // for all-reduce; auto = hetccl's cost table
  hetcclCompression_t compression = hetcclCompressNone; // float32 SUM/AVG all-reduces of this group
  double topkRatio = 0;                             // 0 = hetccl's default
};

class HetcclBackend : public c10d::Backend {
public:
  // Connects the group (blocks until every rank has called). Rank 0 makes
  // the communicator's id, rooted at HETCCL_BIND_ADDR (else loopback) on a
  // free port, and passes it through `store`.
  HetcclBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, Settings settings);
  ~HetcclBackend() override;

  const std::string getBackendName() const override { return "hetccl"; }
  const Settings& settings() const { return settings_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  // A float32 SUM (or AVG) all-reduce with `compression` for this call only
  // (the DDP compression hooks use it); top-k keeps its error-feedback
  // residual per buffer inside hetccl.
  c10::intrusive_ptr<c10d::Work> allreduceCompressed(at::Tensor& tensor, hetcclCompression_t compression,
                                                     double topkRatio, bool average);
  // Ends every call in flight, now and later, with an error (from any thread).
  void abort();
  // Bytes this rank has put on hetccl's transports (collectives only).
  uint64_t bytesSent();

private:
  c10::intrusive_ptr<HetcclWork> enqueue(c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
                                         std::chrono::milliseconds timeout, std::function<void()> body);
  c10::intrusive_ptr<c10d::Work> coalesce(c10::intrusive_ptr<HetcclWork> work);
  // Send and receive byte ranges with every peer in one hetccl group (the
  // p2p-shaped collectives: gather, scatter, uneven all-to-all).
  struct Transfer {
    int peer;
    bool send;
    void* data;
    size_t bytes;
  };
  void exchange(const std::vector<Transfer>& transfers, const char* collective);

  Settings settings_;
  hetcclConfig_t config_;
  hetcclComm_t comm_ = nullptr;
  std::unique_ptr<SerialQueue> queue_;
  std::unique_ptr<PointToPoint> p2p_;
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<c10d::Work>> coalesced_;
};

} // namespace het::torchccl
