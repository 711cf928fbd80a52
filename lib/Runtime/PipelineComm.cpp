//===- PipelineComm.cpp - hetrt_send, hetrt_recv, hetrt_all_reduce --------===//

#include "PipelineComm.h"

#include "Arguments.h"
#include "KernelCall.h"

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

void PipelineComm::flush() {
  if (pending.empty() && receives.empty())
    return;
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
  pending.clear();
  receives.clear();
}

} // namespace het::rt

using namespace het::rt;

namespace {
size_t bytesOf(const KernelCall &call, int buffer, int64_t elementBytes) {
  return static_cast<size_t>(product(call.shapes[buffer]) * elementBytes);
}
} // namespace

// Words: peer stage, channel, bytes per element. The channel orders the
// messages of a stage pair; both sides issue them in channel order (the
// lowering sorts receives), so the message order is the match.
static void send(const int64_t *meta, void *const *buffers) {
  KernelCall call(meta, buffers);
  PipelineComm &comm = pipelineComm();
  size_t bytes = bytesOf(call, 0, call.attribute(2));
  PipelineComm::PendingSend send;
  send.peer = comm.rankOf(static_cast<int>(call.attribute(0)), comm.replica);
  const auto *data = static_cast<const unsigned char *>(buffers[0]);
  send.bytes.assign(data, data + bytes);
  comm.pending.push_back(std::move(send));
}

static void receive(const int64_t *meta, void *const *buffers) {
  KernelCall call(meta, buffers);
  PipelineComm &comm = pipelineComm();
  size_t bytes = bytesOf(call, 0, call.attribute(2));
  int peer = comm.rankOf(static_cast<int>(call.attribute(0)), comm.replica);
  comm.receives.push_back({peer, buffers[0], bytes});
  // The generated code reads no received buffer before its phase's last
  // receive call, so the group can wait for it.
  if (static_cast<int>(comm.receives.size()) >= comm.expectedReceives)
    comm.flush();
}

// Words: reduction, algorithm, compression, top-k ratio (double bits); the
// het enums have hetccl's values.
static void allReduce(const int64_t *meta, void *const *buffers) {
  KernelCall call(meta, buffers);
  PipelineComm &comm = pipelineComm();
  size_t count = static_cast<size_t>(product(call.operandShape(0)));
  if (!comm.stage) { // one replica: the average of one
    std::memcpy(call.result(0), call.operand(0), count * sizeof(float));
    return;
  }
  std::vector<unsigned char> &input = comm.reduceInputs[meta];
  input.resize(count * sizeof(float));
  std::memcpy(input.data(), call.operand(0), input.size());
  auto algorithm = static_cast<hetcclAlgo_t>(call.attribute(1));
  auto compression = static_cast<hetcclCompression_t>(call.attribute(2));
  checkCcl(hetcclCommSetAlgorithm(comm.stage, algorithm), "setting the all-reduce algorithm",
           comm.stage);
  checkCcl(hetcclCommSetCompression(comm.stage, compression, call.floatAttribute(3)),
           "setting the all-reduce compression", comm.stage);
  // In place: hetccl keys top-k's error feedback by the receive buffer.
  checkCcl(hetcclAllReduce(input.data(), input.data(), count, hetcclFloat32,
                           static_cast<hetcclRedOp_t>(call.attribute(0)), comm.stage),
           "gradient all-reduce of stage " + std::to_string(comm.stageIndex), comm.stage);
  std::memcpy(call.result(0), input.data(), input.size());
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

extern "C" void hetrt_send(const int64_t *meta, void *const *buffers) {
  guarded(send, meta, buffers);
}
extern "C" void hetrt_recv(const int64_t *meta, void *const *buffers) {
  guarded(receive, meta, buffers);
}
extern "C" void hetrt_all_reduce(const int64_t *meta, void *const *buffers) {
  guarded(allReduce, meta, buffers);
}
