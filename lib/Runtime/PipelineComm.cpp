//===- PipelineComm.cpp - hetrt_send/recv and the collectives of stages ---===//

#include "PipelineComm.h"

#include "CommTrace.h"

#include "Arguments.h"
#include "KernelCall.h"
#include "RankMetrics.h"

#include "Types/DataType.h" // hetccl: the 16-bit conversions
#include "het/Support/ShareBlocks.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace het::rt {

PipelineComm &pipelineComm() {
  static PipelineComm comm;
  return comm;
}

void checkCcl(hetcclResult_t result, const std::string &what, hetcclComm_t comm) {
  if (result != hetcclSuccess)
    throw std::runtime_error(what + " failed: " + hetcclGetErrorString(result) + " (" +
                             hetcclGetLastError(comm) + ")");
}

const ChannelInfo &PipelineComm::channel(int from, int to, int number) const {
  const ChannelInfo *c = info->channel(from, to, number);
  if (!c)
    throw std::runtime_error("the model description has no channel " + std::to_string(number) +
                             " from stage " + std::to_string(from) + " to stage " +
                             std::to_string(to));
  return *c;
}

std::vector<int> PipelineComm::members(int64_t word) const {
  std::vector<int> ranks;
  if (word == 2) {
    for (int r = 0; r < layout.ranks(); ++r)
      if (!layout.place(r).idle())
        ranks.push_back(r);
    return ranks;
  }
  if (word >= 3 && info && size_t(word - 3) < info->tiedGroups.size()) {
    for (int r = 0; r < layout.ranks(); ++r) {
      const RankPlace &p = layout.place(r);
      const std::vector<int> &stages = info->tiedGroups[word - 3];
      if (!p.idle() && std::find(stages.begin(), stages.end(), p.stage) != stages.end())
        ranks.push_back(r);
    }
    return ranks;
  }
  if (word == 1)
    for (int t = 0; t < layout.tensorParallel(place.stage); ++t)
      ranks.push_back(layout.rankOf(place.stage, place.replica, t));
  else
    for (int r = 0; r < layout.replicas(place.stage); ++r)
      ranks.push_back(layout.rankOf(place.stage, r, place.tp));
  return ranks;
}

void PipelineComm::flush() {
  if (pending.empty() && receives.empty())
    return;
  struct AddTime { // also when an exchange fails and throws
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~AddTime() {
      commSeconds().p2p +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  } timed;
  if (commTrace().on()) {
    std::vector<std::pair<int, size_t>> sent, received;
    for (const PendingSend &send : pending)
      sent.push_back({send.peer, send.bytes.size()});
    for (const PendingReceive &receive : receives)
      received.push_back({receive.peer, receive.bytes});
    commTrace().group(sent, received);
  }
  std::string what = "exchanging activations/gradients with rank";
  checkCcl(hetcclGroupStart(), "hetcclGroupStart", world);
  for (PendingSend &send : pending)
    checkCcl(hetcclSend(send.bytes.data(), send.bytes.size(), hetcclUint8, send.peer, world),
             "send to rank " + std::to_string(send.peer), world);
  for (PendingReceive &receive : receives) {
    checkCcl(hetcclRecv(receive.buffer, receive.bytes, hetcclUint8, receive.peer, world),
             "receive from rank " + std::to_string(receive.peer), world);
    what += " " + std::to_string(receive.peer);
  }
  checkCcl(hetcclGroupEnd(), receives.empty() ? "sending activations/gradients" : what, world);
  // Partial sums from several senders add up in f32, then take their format.
  std::vector<PartialSum *> sums;
  for (PendingReceive &receive : receives) {
    if (!receive.sum)
      continue;
    PartialSum &sum = *receive.sum;
    if (sums.empty() || sums.back() != &sum)
      sums.push_back(&sum);
    const unsigned char *part = receive.scratch.data();
    for (size_t k = 0; k < sum.total.size(); ++k) {
      float value;
      if (sum.format == 0) {
        std::memcpy(&value, part + 4 * k, 4);
      } else {
        uint16_t bits;
        std::memcpy(&bits, part + 2 * k, 2);
        value = sum.format == 1 ? hetccl::bf16ToFloat(bits) : hetccl::halfToFloat(bits);
      }
      sum.total[k] += value;
    }
  }
  for (PartialSum *sum : sums) {
    if (sum->format == 0) {
      std::memcpy(sum->destination, sum->total.data(), 4 * sum->total.size());
      continue;
    }
    auto *out = static_cast<uint16_t *>(sum->destination);
    for (size_t k = 0; k < sum->total.size(); ++k)
      out[k] = sum->format == 1 ? hetccl::floatToBf16(sum->total[k])
                                : hetccl::floatToHalf(sum->total[k]);
  }
  pending.clear();
  receives.clear();
}

} // namespace het::rt

using namespace het::rt;

namespace {

size_t bytesOf(const KernelCall &call, int buffer, int64_t elementBytes) {
  return static_cast<size_t>(product(call.shapes[buffer]) * elementBytes);
}

/// Bytes per sample of a buffer holding this rank's share.
size_t sampleBytes(const PipelineComm &comm, size_t bytes) {
  return bytes / static_cast<size_t>(comm.layout.share(comm.place.stage, comm.place.replica));
}

/// Values for a profiled stage's received buffer: small f32 values of both
/// signs (activations or gradients of a plausible scale), or zeros (valid
/// indices) for other element types.
void fillSynthetic(void *buffer, size_t bytes, int64_t elementBytes) {
  if (elementBytes != 4) {
    std::memset(buffer, 0, bytes);
    return;
  }
  auto *values = static_cast<float *>(buffer);
  uint32_t state = 12345;
  for (size_t k = 0; k < bytes / sizeof(float); ++k) {
    state = state * 1664525u + 1013904223u;
    values[k] = (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.1f;
  }
}

} // namespace

// Words: peer stage, channel, bytes per element. The channel orders the
// messages of a stage pair; both sides issue them in channel order (the
// lowering sorts receives), so the message order is the match.
static void send(const int64_t *meta, void *const *buffers) {
  KernelCall call(meta, buffers);
  PipelineComm &comm = pipelineComm();
  if (comm.profiling)
    return;
  size_t bytes = bytesOf(call, 0, call.attribute(2));
  const ChannelInfo &channel = comm.channel(comm.place.stage, static_cast<int>(call.attribute(0)),
                                            static_cast<int>(call.attribute(1)));
  const auto *data = static_cast<const unsigned char *>(buffers[0]);
  for (const Transfer &t : comm.layout.sends(channel, comm.place)) {
    PipelineComm::PendingSend send;
    send.peer = t.peer;
    if (t.samples < 0) {
      send.bytes.assign(data, data + bytes);
    } else {
      size_t unit = sampleBytes(comm, bytes);
      send.bytes.assign(data + t.firstSample * unit, data + (t.firstSample + t.samples) * unit);
    }
    comm.pending.push_back(std::move(send));
  }
}

static void receive(const int64_t *meta, void *const *buffers) {
  KernelCall call(meta, buffers);
  PipelineComm &comm = pipelineComm();
  size_t bytes = bytesOf(call, 0, call.attribute(2));
  if (comm.profiling) {
    fillSynthetic(buffers[0], bytes, call.attribute(2));
    return;
  }
  const ChannelInfo &channel = comm.channel(static_cast<int>(call.attribute(0)), comm.place.stage,
                                            static_cast<int>(call.attribute(1)));
  bool accumulate = false;
  auto *data = static_cast<unsigned char *>(buffers[0]);
  std::vector<Transfer> transfers = comm.layout.receives(channel, comm.place, accumulate);
  if (accumulate) {
    // A partial sum of the senders' (none: zero), in f32, bf16 or f16.
    ElementFormat format = call.formats[0];
    int64_t elementBytes = call.attribute(2);
    if (elementBytes != (format == ElementFormat::F32 ? 4 : 2))
      throw std::runtime_error("a partial sum between stages must be f32, bf16 or f16, got " +
                               std::to_string(elementBytes) + "-byte elements");
    auto sum = std::make_shared<PipelineComm::PartialSum>();
    sum->total.assign(bytes / static_cast<size_t>(elementBytes), 0.0f);
    sum->destination = data;
    sum->format = static_cast<int>(format);
    if (transfers.empty())
      std::memset(data, 0, bytes);
    for (const Transfer &t : transfers) {
      PipelineComm::PendingReceive r{t.peer, nullptr, bytes, sum, {}};
      r.scratch.resize(bytes);
      r.buffer = r.scratch.data();
      comm.receives.push_back(std::move(r));
    }
  } else {
    for (const Transfer &t : transfers) {
      size_t offset = 0, size = bytes;
      if (t.samples >= 0) {
        size_t unit = sampleBytes(comm, bytes);
        offset = t.firstSample * unit;
        size = t.samples * unit;
      }
      comm.receives.push_back({t.peer, data + offset, size, nullptr, {}});
    }
  }
  // The generated code reads no received buffer before its phase's last
  // receive call, so the group can wait for it.
  if (++comm.receiveCalls >= comm.expectedReceives)
    comm.flush();
}

namespace {

/// The communicator a collective runs on (word: 0 the stage's replicas, 1
/// this replica's tensor-parallel devices, 2 every working rank, 3 + k the
/// ranks of tied group k); null: a group of one.
hetcclComm_t communicator(const PipelineComm &comm, int64_t word) {
  if (word >= 3) {
    size_t k = static_cast<size_t>(word - 3);
    if (!comm.world)
      return nullptr; // profiling stages apart: no communication
    if (k >= comm.tied.size() || !comm.tied[k])
      die("internal error: a collective over tied group " + std::to_string(k) +
          ", which this rank is not part of");
    return comm.tied[k];
  }
  return word == 2 ? comm.job : word == 1 ? comm.tensor : comm.data;
}

} // namespace

hetcclComm_t het::rt::PipelineComm::communicator(int64_t word) const {
  return ::communicator(*this, word);
}

namespace {

/// A gather or scatter's group and its size; null (and the input copied to
/// the result) for a group of one.
hetcclComm_t groupOf(const KernelCall &call, int64_t word, int &members) {
  hetcclComm_t group = communicator(pipelineComm(), word);
  if (!group) {
    std::memcpy(call.result(0), call.operand(0), product(call.operandShape(0)) * sizeof(float));
    return nullptr;
  }
  checkCcl(hetcclCommCount(group, &members), "counting the group", group);
  return group;
}

/// Elements per row of a tensor: those after its first dimension.
size_t rowElements(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (size_t d = 1; d < shape.size(); ++d)
    n *= static_cast<size_t>(shape[d]);
  return n;
}

/// The blocks by batch share of `rows` rows over this stage's replicas,
/// checked against this rank's compiled block of `length` rows.
std::vector<het::ShareBlock> shareBlocksHere(int64_t rows, int64_t length, const char *what) {
  const PipelineComm &comm = pipelineComm();
  std::vector<het::ShareBlock> blocks = comm.layout.shareBlocks(comm.place.stage, rows);
  if (blocks.at(comm.place.replica).length != length)
    throw std::runtime_error(std::string("internal error: ") + what + " of stage " +
                             std::to_string(comm.place.stage) + " has a block of " +
                             std::to_string(length) + " rows; the plan's shares give replica " +
                             std::to_string(comm.place.replica) + " " +
                             std::to_string(blocks[comm.place.replica].length));
  return blocks;
}

/// The elements of each block (rows past the whole's end are not sent).
std::vector<size_t> heldElements(const std::vector<het::ShareBlock> &blocks, size_t inner) {
  std::vector<size_t> counts;
  for (const het::ShareBlock &b : blocks)
    counts.push_back(static_cast<size_t>(b.held) * inner);
  return counts;
}

/// Elements before, along and after `axis` of `shape`.
void split(const std::vector<int64_t> &shape, int64_t axis, int64_t &outer, int64_t &along,
           int64_t &inner) {
  outer = 1;
  inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  along = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
}

} // namespace

// Words: reduction, algorithm, compression, top-k ratio (double bits),
// communicator; the het enums have hetccl's values.
static void allReduce(const int64_t *meta, void *const *buffers) {
  KernelCall call(meta, buffers);
  PipelineComm &comm = pipelineComm();
  size_t count = static_cast<size_t>(product(call.operandShape(0)));
  hetcclComm_t group = communicator(comm, call.attribute(4));
  if (!group) { // one member: the sum or average of one
    std::memcpy(call.result(0), call.operand(0), count * sizeof(float));
    return;
  }
  commTrace().collective("all_reduce", comm.members(call.attribute(4)), count * sizeof(float));
  std::vector<unsigned char> &input = comm.reduceInputs[meta];
  input.resize(count * sizeof(float));
  std::memcpy(input.data(), call.operand(0), input.size());
  auto algorithm = static_cast<hetcclAlgo_t>(call.attribute(1));
  auto compression = static_cast<hetcclCompression_t>(call.attribute(2));
  checkCcl(hetcclCommSetAlgorithm(group, algorithm), "setting the all-reduce algorithm", group);
  checkCcl(hetcclCommSetCompression(group, compression, call.floatAttribute(3)),
           "setting the all-reduce compression", group);
  // In place: hetccl keys top-k's error feedback by the receive buffer.
  checkCcl(hetcclAllReduce(input.data(), input.data(), count, hetcclFloat32,
                           static_cast<hetcclRedOp_t>(call.attribute(0)), group),
           std::string(call.attribute(4) >= 3   ? "tied parameter's gradient"
                       : call.attribute(4) == 2 ? "job-wide (loss scaling's found-inf)"
                       : call.attribute(4) == 1 ? "tensor-parallel"
                                                : "gradient") +
               " all-reduce of stage " + std::to_string(comm.place.stage),
           group);
  std::memcpy(call.result(0), input.data(), input.size());
}

// Words: axis, communicator, by share. Each member's tensor becomes its
// slice of the result along `axis`; with by share, its block of rows
// (padding dropped): the updated blocks of sharded optimizer state.
static void allGather(const int64_t *meta, void *const *buffers) {
  KernelCall call(meta, buffers);
  PipelineComm &comm = pipelineComm();
  if (call.attribute(2)) {
    hetcclComm_t group = communicator(comm, call.attribute(1));
    if (!group)
      throw std::runtime_error("internal error: a by-share all-gather over a group of one");
    const std::vector<int64_t> &out = call.resultShape(0);
    size_t inner = rowElements(out);
    std::vector<het::ShareBlock> blocks =
        shareBlocksHere(out.at(0), call.operandShape(0).at(0), "a parameter all-gather");
    std::vector<size_t> counts = heldElements(blocks, inner);
    commTrace().collective("all_gather", comm.members(0), out[0] * inner * sizeof(float));
    checkCcl(hetcclAllGatherV(call.operand(0), call.result(0), counts.data(), hetcclFloat32, group),
             "parameter all-gather of stage " + std::to_string(comm.place.stage) +
                 " (sharded optimizer state)",
             group);
    return;
  }
  int members = 1;
  hetcclComm_t group = groupOf(call, call.attribute(1), members);
  if (!group)
    return;
  const std::vector<int64_t> &in = call.operandShape(0);
  size_t count = static_cast<size_t>(product(in));
  commTrace().collective("all_gather", comm.members(call.attribute(1)), count * sizeof(float));
  std::vector<float> gathered(count * members);
  checkCcl(hetcclAllGather(call.operand(0), gathered.data(), count, hetcclFloat32, group),
           "tensor-parallel all-gather of stage " + std::to_string(comm.place.stage), group);
  int64_t outer, along, inner;
  split(in, call.attribute(0), outer, along, inner);
  float *out = call.result(0);
  for (int64_t o = 0; o < outer; ++o)
    for (int m = 0; m < members; ++m)
      std::memcpy(out + (o * members + m) * along * inner,
                  gathered.data() + m * count + o * along * inner, along * inner * sizeof(float));
}

// A by_share reduce-scatter: this replica's block of rows of the reduced
// gradient, zeros past the end of the whole.
static void reduceScatterByShare(const KernelCall &call, hetcclComm_t group) {
  PipelineComm &comm = pipelineComm();
  const std::vector<int64_t> &in = call.operandShape(0);
  size_t inner = rowElements(in);
  int64_t length = call.resultShape(0).at(0);
  std::vector<het::ShareBlock> blocks = shareBlocksHere(in[0], length, "a gradient reduce-scatter");
  std::vector<size_t> counts = heldElements(blocks, inner);
  const het::ShareBlock &mine = blocks[comm.place.replica];
  float *out = call.result(0);
  std::memset(out, 0, static_cast<size_t>(length) * inner * sizeof(float));
  commTrace().collective("reduce_scatter", comm.members(0), in[0] * inner * sizeof(float));
  checkCcl(hetcclReduceScatterV(call.operand(0), out, counts.data(), hetcclFloat32,
                                static_cast<hetcclRedOp_t>(call.attribute(0)), group),
           "gradient reduce-scatter of stage " + std::to_string(comm.place.stage) +
               " (sharded optimizer state, " + std::to_string(mine.held) + " rows here)",
           group);
}

// Words: reduction, axis, communicator, by share. Member m keeps slice m
// (along `axis`) of the reduction, or with by share its block of rows.
static void reduceScatter(const int64_t *meta, void *const *buffers) {
  KernelCall call(meta, buffers);
  PipelineComm &comm = pipelineComm();
  if (call.attribute(3)) {
    hetcclComm_t group = communicator(comm, call.attribute(2));
    if (!group)
      throw std::runtime_error("internal error: a by-share reduce-scatter over a group of one");
    reduceScatterByShare(call, group);
    return;
  }
  int members = 1;
  hetcclComm_t group = groupOf(call, call.attribute(2), members);
  if (!group)
    return;
  const std::vector<int64_t> &in = call.operandShape(0);
  size_t count = static_cast<size_t>(product(in));
  int64_t outer, along, inner;
  split(in, call.attribute(1), outer, along, inner);
  commTrace().collective("reduce_scatter", comm.members(call.attribute(2)), count * sizeof(float));
  int64_t part = along / members;
  // Slice m of every outer index together, so each member's part is one run.
  std::vector<float> arranged(count);
  const float *input = call.operand(0);
  for (int m = 0; m < members; ++m)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(arranged.data() + (m * outer + o) * part * inner,
                  input + (o * along + m * part) * inner, part * inner * sizeof(float));
  checkCcl(hetcclReduceScatter(arranged.data(), call.result(0), count / members, hetcclFloat32,
                               static_cast<hetcclRedOp_t>(call.attribute(0)), group),
           "tensor-parallel reduce-scatter of stage " + std::to_string(comm.place.stage), group);
}

// Words: axis, communicator. This replica's block of rows of a tensor every
// replica holds whole (a parameter whose block it updates); no messages.
static void shard(const int64_t *meta, void *const *buffers) {
  KernelCall call(meta, buffers);
  const std::vector<int64_t> &in = call.operandShape(0);
  size_t inner = rowElements(in);
  int64_t length = call.resultShape(0).at(0);
  het::ShareBlock mine =
      shareBlocksHere(in.at(0), length, "a parameter's block").at(pipelineComm().place.replica);
  float *out = call.result(0);
  std::memset(out, 0, static_cast<size_t>(length) * inner * sizeof(float));
  std::memcpy(out, call.operand(0) + mine.begin * inner, mine.held * inner * sizeof(float));
}

// Generated code calls these; a failure must not unwind through its frames
// (they may have no unwind tables): report it and end the rank here.
template <typename F>
static void guarded(F &&f, const int64_t *meta, void *const *buffers) {
  try {
    f(meta, buffers);
  } catch (const std::exception &e) {
    die(e.what());
  }
}

/// A collective, its time added to the rank's metrics.
template <typename F>
static void timedCollective(F &&f, const int64_t *meta, void *const *buffers) {
  auto t0 = std::chrono::steady_clock::now();
  guarded(f, meta, buffers);
  commSeconds().collective +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

extern "C" void hetrt_send(const int64_t *meta, void *const *buffers) {
  guarded(send, meta, buffers);
}
extern "C" void hetrt_recv(const int64_t *meta, void *const *buffers) {
  guarded(receive, meta, buffers);
}
extern "C" void hetrt_all_reduce(const int64_t *meta, void *const *buffers) {
  timedCollective(allReduce, meta, buffers);
}
extern "C" void hetrt_all_gather(const int64_t *meta, void *const *buffers) {
  timedCollective(allGather, meta, buffers);
}
extern "C" void hetrt_reduce_scatter(const int64_t *meta, void *const *buffers) {
  timedCollective(reduceScatter, meta, buffers);
}
extern "C" void hetrt_shard(const int64_t *meta, void *const *buffers) {
  guarded(shard, meta, buffers);
}

/// The index of this rank among its replica's tensor-parallel devices (0
/// outside pipelines): which shard of a split vocabulary it holds.
int hetrtTensorParallelRank() { return pipelineComm().place.tp; }
