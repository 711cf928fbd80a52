#include "HetcclBackend.h"

#include "Errors.h"
#include "GilRelease.h"
#include "Tensors.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>

namespace het::torchccl {

// Where this rank's hetccl ends listen: HETCCL_BIND_ADDR (hetccl's own
// variable for the data address) or loopback, on a port picked now.
static std::string listenRoot() {
  const char* bind = getenv("HETCCL_BIND_ADDR");
  return std::string(bind && *bind ? bind : "127.0.0.1") + ":0";
}

HetcclBackend::HetcclBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, Settings settings)
    : Backend(rank, size), settings_(settings) {
  hetcclConfigInit(&config_);
  config_.timeoutMs = settings_.timeout.count() > 0 ? settings_.timeout.count() : 0;
  config_.algo = settings_.algorithm;
  config_.compression = settings_.compression;
  config_.topkRatio = settings_.topkRatio;
  hetcclUniqueId id;
  const std::string key = "hetccl/id";
  if (rank == 0) {
    check(hetcclGetUniqueIdAt(&id, listenRoot().c_str()), nullptr, "init: making the group's id");
    store->set(key, std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal));
  } else {
    std::vector<uint8_t> bytes = store->get(key);
    TORCH_CHECK(bytes.size() == sizeof id.internal, "hetccl init: the id in the store has ", bytes.size(),
                " bytes, not ", sizeof id.internal);
    memcpy(id.internal, bytes.data(), bytes.size());
  }
  check(hetcclCommInitRank(&comm_, size, id, rank, &config_), nullptr,
        "init of rank " + std::to_string(rank) + " of " + std::to_string(size));
  queue_ = std::make_unique<SerialQueue>("hetccl backend");
  p2p_ = std::make_unique<PointToPoint>(store, rank, size, config_, listenRoot());
}

HetcclBackend::~HetcclBackend() {
  GilRelease gil;
  queue_.reset(); // runs what was queued; abort() first makes that quick
  p2p_.reset();
  hetcclCommDestroy(comm_);
}

void HetcclBackend::abort() {
  // Revoke, not abort: the backend's threads may still call in (queued
  // work), and must get hetcclAborted, not a freed communicator.
  hetcclCommRevoke(comm_);
  p2p_->abort();
}

uint64_t HetcclBackend::bytesSent() {
  queue_->drain();
  uint64_t bytes = 0;
  check(hetcclCommGetBytesSent(comm_, &bytes), comm_, "bytes sent");
  return bytes;
}

c10::intrusive_ptr<HetcclWork> HetcclBackend::enqueue(c10d::OpType type, const char* title,
                                                      std::vector<at::Tensor> outputs,
                                                      std::chrono::milliseconds timeout,
                                                      std::function<void()> body) {
  auto work = c10::make_intrusive<HetcclWork>(getRank(), type, title, std::move(outputs));
  // A per-call timeout (the collective's `timeout=`) holds for that call only.
  bool ownTimeout = timeout != c10d::kUnsetTimeout && timeout.count() > 0 && timeout != settings_.timeout;
  queue_->push(work, [this, body = std::move(body), ownTimeout, timeout] {
    if (!ownTimeout) return body();
    check(hetcclCommSetTimeout(comm_, timeout.count()), comm_, "setting the call's timeout");
    try {
      body();
    } catch (...) {
      hetcclCommSetTimeout(comm_, config_.timeoutMs);
      throw;
    }
    hetcclCommSetTimeout(comm_, config_.timeoutMs);
  });
  return work;
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::coalesce(c10::intrusive_ptr<HetcclWork> work) {
  if (coalescing_) coalesced_.push_back(work);
  return work;
}

void HetcclBackend::startCoalescing() {
  TORCH_CHECK_VALUE(!coalescing_, "hetccl: startCoalescing twice without endCoalescing");
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::endCoalescing() {
  TORCH_CHECK_VALUE(coalescing_, "hetccl: endCoalescing without startCoalescing");
  coalescing_ = false;
  return c10::make_intrusive<AllOfWork>(getRank(), std::move(coalesced_));
}

// --- Reductions ---------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> HetcclBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::AllreduceOptions& opts) {
  checkSingleTensor(tensors, "all_reduce");
  Reduction r = reductionFor(tensors[0], opts.reduceOp, "all_reduce");
  HostTensor h(tensors[0]);
  return coalesce(enqueue(c10d::OpType::ALLREDUCE, "hetccl:all_reduce", tensors, opts.timeout, [this, h, r] {
    check(hetcclAllReduce(h.data(), h.data(), h.reductionCount(), r.type, r.op, comm_), comm_, "all_reduce");
    h.writeBack();
  }));
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                  const c10d::AllreduceCoalescedOptions& opts) {
  std::vector<std::pair<HostTensor, Reduction>> parts;
  for (auto& t : tensors) {
    checkDense(t, "all_reduce_coalesced");
    parts.emplace_back(HostTensor(t), reductionFor(t, opts.reduceOp, "all_reduce_coalesced"));
  }
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, "hetccl:all_reduce_coalesced", tensors, opts.timeout,
                 [this, parts] {
                   for (auto& [h, r] : parts) {
                     check(hetcclAllReduce(h.data(), h.data(), h.reductionCount(), r.type, r.op, comm_), comm_,
                           "all_reduce_coalesced");
                     h.writeBack();
                   }
                 });
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::allreduceCompressed(at::Tensor& tensor,
                                                                  hetcclCompression_t compression,
                                                                  double topkRatio, bool average) {
  checkDense(tensor, "compressed all_reduce");
  TORCH_CHECK_VALUE(tensor.scalar_type() == at::kFloat, "hetccl compressed all_reduce: float32 only, got ",
                    tensor.scalar_type());
  HostTensor h(tensor);
  return enqueue(c10d::OpType::ALLREDUCE, "hetccl:compressed_all_reduce", {tensor}, c10d::kUnsetTimeout,
                 [this, h, compression, topkRatio, average] {
                   check(hetcclCommSetCompression(comm_, compression, topkRatio), comm_, "setting the compression");
                   hetcclResult_t r = hetcclAllReduce(h.data(), h.data(), h.reductionCount(), hetcclFloat32,
                                                      average ? hetcclAvg : hetcclSum, comm_);
                   // The group's own setting again, whatever the call did.
                   hetcclCommSetCompression(comm_, config_.compression, config_.topkRatio);
                   check(r, comm_, "compressed all_reduce");
                   h.writeBack();
                 });
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::reduce(std::vector<at::Tensor>& tensors,
                                                     const c10d::ReduceOptions& opts) {
  checkSingleTensor(tensors, "reduce");
  Reduction r = reductionFor(tensors[0], opts.reduceOp, "reduce");
  int root = int(opts.rootRank);
  TORCH_CHECK_VALUE(root >= 0 && root < getSize(), "hetccl reduce: root ", root, " is not in this group of ",
                    getSize());
  HostTensor h(tensors[0]);
  return enqueue(c10d::OpType::REDUCE, "hetccl:reduce", tensors, opts.timeout, [this, h, r, root] {
    check(hetcclReduce(h.data(), h.data(), h.reductionCount(), r.type, r.op, root, comm_), comm_, "reduce");
    if (getRank() == root) h.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                   const c10d::ReduceScatterOptions& opts) {
  checkDense(output, "reduce_scatter_tensor");
  checkDense(input, "reduce_scatter_tensor");
  TORCH_CHECK_VALUE(input.scalar_type() == output.scalar_type(), "hetccl reduce_scatter_tensor: input dtype ",
                    input.scalar_type(), " differs from output dtype ", output.scalar_type());
  TORCH_CHECK_VALUE(input.numel() == output.numel() * getSize(), "hetccl reduce_scatter_tensor: input has ",
                    input.numel(), " elements, expected output's ", output.numel(), " times the group size ",
                    getSize());
  Reduction r = reductionFor(output, opts.reduceOp, "reduce_scatter_tensor");
  HostTensor in(input), out = HostTensor::forOutput(output);
  return coalesce(enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, "hetccl:reduce_scatter_tensor", {output},
                          opts.timeout, [this, in, out, r] {
                            check(hetcclReduceScatter(in.data(), out.data(), out.reductionCount(), r.type, r.op,
                                                      comm_),
                                  comm_, "reduce_scatter_tensor");
                            out.writeBack();
                          }));
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                             std::vector<std::vector<at::Tensor>>& inputs,
                                                             const c10d::ReduceScatterOptions& opts) {
  checkSingleTensor(outputs, "reduce_scatter");
  TORCH_CHECK_VALUE(inputs.size() == 1 && int(inputs[0].size()) == getSize(), "hetccl reduce_scatter: expected ",
                    getSize(), " input tensors (one per rank)");
  for (auto& t : inputs[0]) checkSameTypeAndSize(outputs[0], t, "reduce_scatter", "an input tensor");
  std::vector<at::Tensor> flat;
  for (auto& t : inputs[0]) flat.push_back(t.reshape({-1}).to(at::kCPU));
  at::Tensor input = at::cat(flat);
  return _reduce_scatter_base(outputs[0], input, opts);
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "hetccl reduce_scatter_tensor_coalesced: ", outputs.size(),
                    " outputs for ", inputs.size(), " inputs");
  std::vector<c10::intrusive_ptr<c10d::Work>> parts;
  for (size_t i = 0; i < outputs.size(); ++i) parts.push_back(_reduce_scatter_base(outputs[i], inputs[i], opts));
  return c10::make_intrusive<AllOfWork>(getRank(), std::move(parts));
}

// --- Data movement (every dtype, as bytes) -----------------------------------

c10::intrusive_ptr<c10d::Work> HetcclBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                        const c10d::BroadcastOptions& opts) {
  checkSingleTensor(tensors, "broadcast");
  int root = int(opts.rootRank);
  TORCH_CHECK_VALUE(root >= 0 && root < getSize(), "hetccl broadcast: root ", root, " is not in this group of ",
                    getSize());
  HostTensor h(tensors[0]);
  return coalesce(enqueue(c10d::OpType::BROADCAST, "hetccl:broadcast", tensors, opts.timeout, [this, h, root] {
    check(hetcclBroadcast(h.data(), h.data(), h.bytes(), kBytes, root, comm_), comm_, "broadcast");
    h.writeBack();
  }));
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                              const c10d::AllgatherOptions& opts) {
  checkDense(output, "all_gather_into_tensor");
  checkDense(input, "all_gather_into_tensor");
  TORCH_CHECK_VALUE(input.scalar_type() == output.scalar_type(), "hetccl all_gather_into_tensor: input dtype ",
                    input.scalar_type(), " differs from output dtype ", output.scalar_type());
  TORCH_CHECK_VALUE(output.numel() == input.numel() * getSize(), "hetccl all_gather_into_tensor: output has ",
                    output.numel(), " elements, expected input's ", input.numel(), " times the group size ",
                    getSize());
  HostTensor in(input), out = HostTensor::forOutput(output);
  return coalesce(enqueue(c10d::OpType::_ALLGATHER_BASE, "hetccl:all_gather_into_tensor", {output}, opts.timeout,
                          [this, in, out] {
                            check(hetcclAllGather(in.data(), out.data(), in.bytes(), kBytes, comm_), comm_,
                                  "all_gather_into_tensor");
                            out.writeBack();
                          }));
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::AllgatherOptions& opts) {
  checkSingleTensor(inputs, "all_gather");
  TORCH_CHECK_VALUE(outputs.size() == 1 && int(outputs[0].size()) == getSize(), "hetccl all_gather: expected ",
                    getSize(), " output tensors (one per rank)");
  for (auto& t : outputs[0]) {
    checkDense(t, "all_gather");
    checkSameTypeAndSize(inputs[0], t, "all_gather", "an output tensor");
  }
  HostTensor in(inputs[0]);
  at::Tensor flat = at::empty({getSize() * inputs[0].numel()}, inputs[0].options().device(at::kCPU));
  std::vector<at::Tensor> outs = outputs[0];
  return enqueue(c10d::OpType::ALLGATHER, "hetccl:all_gather", outs, opts.timeout, [this, in, flat, outs] {
    check(hetcclAllGather(in.data(), flat.data_ptr(), in.bytes(), kBytes, comm_), comm_, "all_gather");
    int64_t n = in.host().numel();
    for (size_t i = 0; i < outs.size(); ++i) outs[i].copy_(flat.narrow(0, int64_t(i) * n, n).view(outs[i].sizes()));
  });
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                  std::vector<at::Tensor>& inputs,
                                                                  const c10d::AllgatherOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "hetccl all_gather_coalesced: ", outputs.size(),
                    " output lists for ", inputs.size(), " inputs");
  std::vector<c10::intrusive_ptr<c10d::Work>> parts;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<std::vector<at::Tensor>> out{outputs[i]};
    std::vector<at::Tensor> in{inputs[i]};
    parts.push_back(allgather(out, in, opts));
  }
  return c10::make_intrusive<AllOfWork>(getRank(), std::move(parts));
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                              std::vector<at::Tensor>& inputs,
                                                                              const c10d::AllgatherOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "hetccl all_gather_into_tensor_coalesced: ", outputs.size(),
                    " outputs for ", inputs.size(), " inputs");
  std::vector<c10::intrusive_ptr<c10d::Work>> parts;
  for (size_t i = 0; i < outputs.size(); ++i) parts.push_back(_allgather_base(outputs[i], inputs[i], opts));
  return c10::make_intrusive<AllOfWork>(getRank(), std::move(parts));
}

void HetcclBackend::exchange(const std::vector<Transfer>& transfers, const char* collective) {
  check(hetcclGroupStart(), comm_, collective);
  hetcclResult_t first = hetcclSuccess;
  for (const Transfer& t : transfers) {
    if (t.bytes == 0) continue;
    hetcclResult_t r = t.send ? hetcclSend(t.data, t.bytes, kBytes, t.peer, comm_)
                              : hetcclRecv(t.data, t.bytes, kBytes, t.peer, comm_);
    if (r != hetcclSuccess && first == hetcclSuccess) first = r;
  }
  hetcclResult_t end = hetcclGroupEnd();
  check(first != hetcclSuccess ? first : end, comm_, collective);
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::GatherOptions& opts) {
  checkSingleTensor(inputs, "gather");
  int root = int(opts.rootRank);
  TORCH_CHECK_VALUE(root >= 0 && root < getSize(), "hetccl gather: root ", root, " is not in this group of ",
                    getSize());
  bool isRoot = getRank() == root;
  std::vector<HostTensor> outs;
  std::vector<at::Tensor> outTensors;
  if (isRoot) {
    TORCH_CHECK_VALUE(outputs.size() == 1 && int(outputs[0].size()) == getSize(), "hetccl gather: the root needs ",
                      getSize(), " output tensors (one per rank)");
    for (auto& t : outputs[0]) {
      checkDense(t, "gather");
      checkSameTypeAndSize(inputs[0], t, "gather", "an output tensor");
      outs.push_back(HostTensor::forOutput(t));
    }
    outTensors = outputs[0];
  } else {
    TORCH_CHECK_VALUE(outputs.empty() || outputs[0].empty(), "hetccl gather: only the root passes output tensors");
  }
  HostTensor in(inputs[0]);
  return enqueue(c10d::OpType::GATHER, "hetccl:gather", outTensors, opts.timeout, [this, in, outs, root, isRoot] {
    std::vector<Transfer> transfers;
    if (isRoot) {
      for (int p = 0; p < getSize(); ++p)
        if (p != root) transfers.push_back({p, false, outs[p].data(), outs[p].bytes()});
    } else {
      transfers.push_back({root, true, in.data(), in.bytes()});
    }
    exchange(transfers, "gather");
    if (isRoot) {
      memcpy(outs[root].data(), in.data(), in.bytes());
      for (auto& o : outs) o.writeBack();
    }
  });
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::scatter(std::vector<at::Tensor>& outputs,
                                                      std::vector<std::vector<at::Tensor>>& inputs,
                                                      const c10d::ScatterOptions& opts) {
  checkSingleTensor(outputs, "scatter");
  int root = int(opts.rootRank);
  TORCH_CHECK_VALUE(root >= 0 && root < getSize(), "hetccl scatter: root ", root, " is not in this group of ",
                    getSize());
  bool isRoot = getRank() == root;
  std::vector<HostTensor> ins;
  if (isRoot) {
    TORCH_CHECK_VALUE(inputs.size() == 1 && int(inputs[0].size()) == getSize(), "hetccl scatter: the root needs ",
                      getSize(), " input tensors (one per rank)");
    for (auto& t : inputs[0]) {
      checkDense(t, "scatter");
      checkSameTypeAndSize(outputs[0], t, "scatter", "an input tensor");
      ins.emplace_back(t);
    }
  } else {
    TORCH_CHECK_VALUE(inputs.empty() || inputs[0].empty(), "hetccl scatter: only the root passes input tensors");
  }
  HostTensor out = HostTensor::forOutput(outputs[0]);
  return enqueue(c10d::OpType::SCATTER, "hetccl:scatter", outputs, opts.timeout, [this, ins, out, root, isRoot] {
    std::vector<Transfer> transfers;
    if (isRoot) {
      for (int p = 0; p < getSize(); ++p)
        if (p != root) transfers.push_back({p, true, ins[p].data(), ins[p].bytes()});
    } else {
      transfers.push_back({root, false, out.data(), out.bytes()});
    }
    exchange(transfers, "scatter");
    if (isRoot) memcpy(out.data(), ins[root].data(), out.bytes());
    out.writeBack();
  });
}

// Rows of dim 0 per rank: the given split sizes, or an even split.
static std::vector<int64_t> splitRows(const at::Tensor& t, const std::vector<int64_t>& splits, int size,
                                      const char* which) {
  int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  if (splits.empty()) {
    TORCH_CHECK_VALUE(rows % size == 0, "hetccl all_to_all_single: ", which, " has ", rows,
                      " rows, not divisible by the group size ", size, "; pass split sizes");
    return std::vector<int64_t>(size, rows / size);
  }
  TORCH_CHECK_VALUE(int(splits.size()) == size, "hetccl all_to_all_single: ", splits.size(), " ", which,
                    " split sizes for a group of ", size);
  int64_t total = 0;
  for (int64_t s : splits) {
    TORCH_CHECK_VALUE(s >= 0, "hetccl all_to_all_single: negative ", which, " split size ", s);
    total += s;
  }
  TORCH_CHECK_VALUE(total == rows, "hetccl all_to_all_single: ", which, " split sizes add up to ", total,
                    " rows, the tensor has ", rows);
  return splits;
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                            std::vector<int64_t>& outputSplitSizes,
                                                            std::vector<int64_t>& inputSplitSizes,
                                                            const c10d::AllToAllOptions& opts) {
  checkDense(output, "all_to_all_single");
  checkDense(input, "all_to_all_single");
  TORCH_CHECK_VALUE(input.scalar_type() == output.scalar_type(), "hetccl all_to_all_single: input dtype ",
                    input.scalar_type(), " differs from output dtype ", output.scalar_type());
  int p = getSize();
  HostTensor in(input), out = HostTensor::forOutput(output);
  if (outputSplitSizes.empty() && inputSplitSizes.empty()) {
    TORCH_CHECK_VALUE(input.numel() == output.numel() && input.numel() % p == 0, "hetccl all_to_all_single: ",
                      input.numel(), " input and ", output.numel(), " output elements; both must be equal and "
                      "divisible by the group size ", p);
    return enqueue(c10d::OpType::ALLTOALL_BASE, "hetccl:all_to_all_single", {output}, opts.timeout,
                   [this, in, out, p] {
                     check(hetcclAllToAll(in.data(), out.data(), in.bytes() / p, kBytes, comm_), comm_,
                           "all_to_all_single");
                     out.writeBack();
                   });
  }
  auto inRows = splitRows(input, inputSplitSizes, p, "input");
  auto outRows = splitRows(output, outputSplitSizes, p, "output");
  auto rowBytes = [](const at::Tensor& t) -> size_t {
    int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    return rows == 0 ? 0 : size_t(t.numel() / rows) * t.element_size();
  };
  size_t inRow = rowBytes(input), outRow = rowBytes(output);
  // Byte ranges per peer, and this rank's own block (copied locally).
  std::vector<size_t> inOff(p + 1, 0), outOff(p + 1, 0);
  for (int q = 0; q < p; ++q) {
    inOff[q + 1] = inOff[q] + size_t(inRows[q]) * inRow;
    outOff[q + 1] = outOff[q] + size_t(outRows[q]) * outRow;
  }
  int me = getRank();
  size_t selfBytes = inOff[me + 1] - inOff[me];
  TORCH_CHECK_VALUE(selfBytes == outOff[me + 1] - outOff[me], "hetccl all_to_all_single: this rank sends itself ",
                    selfBytes, " bytes but expects ", outOff[me + 1] - outOff[me]);
  // hetcclAllToAllV by bytes: every pair exchanges a frame, empty ones
  // too, so split sizes the two sides disagree on fail the call at once.
  std::vector<size_t> sendCounts(p), recvCounts(p);
  for (int q = 0; q < p; ++q) {
    sendCounts[q] = inOff[q + 1] - inOff[q];
    recvCounts[q] = outOff[q + 1] - outOff[q];
  }
  return enqueue(c10d::OpType::ALLTOALL_BASE, "hetccl:all_to_all_single", {output}, opts.timeout,
                 [this, in, out, inOff, outOff, sendCounts, recvCounts] {
                   check(hetcclAllToAllV(in.data(), sendCounts.data(), inOff.data(), out.data(),
                                         recvCounts.data(), outOff.data(), kBytes, comm_),
                         comm_, "all_to_all_single");
                   out.writeBack();
                 });
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::AllToAllOptions& opts) {
  int p = getSize();
  TORCH_CHECK_VALUE(int(outputs.size()) == p && int(inputs.size()) == p, "hetccl all_to_all: expected ", p,
                    " input and ", p, " output tensors, got ", inputs.size(), " and ", outputs.size());
  std::vector<HostTensor> ins, outs;
  for (int q = 0; q < p; ++q) {
    checkDense(inputs[q], "all_to_all");
    checkDense(outputs[q], "all_to_all");
    TORCH_CHECK_VALUE(inputs[q].scalar_type() == outputs[q].scalar_type(), "hetccl all_to_all: input ", q,
                      " has dtype ", inputs[q].scalar_type(), ", output ", q, " has ", outputs[q].scalar_type());
    ins.emplace_back(inputs[q]);
    outs.push_back(HostTensor::forOutput(outputs[q]));
  }
  TORCH_CHECK_VALUE(ins[getRank()].bytes() == outs[getRank()].bytes(), "hetccl all_to_all: this rank's own input (",
                    ins[getRank()].bytes(), " bytes) and output (", outs[getRank()].bytes(), " bytes) differ");
  return enqueue(c10d::OpType::ALLTOALL, "hetccl:all_to_all", outputs, opts.timeout, [this, ins, outs, p] {
    std::vector<Transfer> transfers;
    for (int q = 0; q < p; ++q) {
      if (q == getRank()) continue;
      transfers.push_back({q, true, ins[q].data(), ins[q].bytes()});
      transfers.push_back({q, false, outs[q].data(), outs[q].bytes()});
    }
    exchange(transfers, "all_to_all");
    memcpy(outs[getRank()].data(), ins[getRank()].data(), ins[getRank()].bytes());
    for (auto& o : outs) o.writeBack();
  });
}

// --- Point to point and barrier ----------------------------------------------

c10::intrusive_ptr<c10d::Work> HetcclBackend::send(std::vector<at::Tensor>& tensors, int dstRank, int /*tag*/) {
  checkSingleTensor(tensors, "send");
  return coalesce(p2p_->send(tensors[0], dstRank));
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::recv(std::vector<at::Tensor>& tensors, int srcRank, int /*tag*/) {
  checkSingleTensor(tensors, "recv");
  return coalesce(p2p_->recv(tensors[0], srcRank));
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::recvAnysource(std::vector<at::Tensor>& /*tensors*/, int /*tag*/) {
  TORCH_CHECK_VALUE(false, "hetccl recv: receiving from any source is not supported; name the source rank");
}

c10::intrusive_ptr<c10d::Work> HetcclBackend::barrier(const c10d::BarrierOptions& opts) {
  return enqueue(c10d::OpType::BARRIER, "hetccl:barrier", {}, opts.timeout,
                 [this] { check(hetcclBarrier(comm_), comm_, "barrier"); });
}

} // namespace het::torchccl
