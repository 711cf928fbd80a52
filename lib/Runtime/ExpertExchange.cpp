//===- ExpertExchange.cpp - the all-to-all of expert parallelism ----------===//
//
// hetrt_moe_to_experts and hetrt_moe_from_experts (HetMoEOps.td): the rows
// of a mixture-of-experts layer between the replicas of a stage holding
// blocks of its experts. Each call is two hetcclAllToAllV: the counts of
// filled rows per expert (so receivers know how many rows come, and
// neither side sends padding), then the rows themselves, in the buffer's
// format, as bytes. A member holds experts [first_m, first_m + n_m); the
// rows of one of its experts are laid out sender by sender (member 0's,
// then member 1's, ...), then zeros, and the counts say how many there are
// (the routing of the grouped products that follow).
//
// Words: the communicator (0: the stage's replicas), the members R, then
// n_0 ... n_{R-1}.
//
//===----------------------------------------------------------------------===//

#include "Arguments.h"
#include "CommTrace.h"
#include "KernelCall.h"
#include "PipelineComm.h"
#include "RankMetrics.h"

#include "Kernels.h" // het::eval (lib/Eval)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>

using namespace het::rt;

namespace {

size_t elementBytes(ElementFormat format) { return format == ElementFormat::F32 ? 4 : 2; }

/// What both directions know before moving rows: who holds which experts,
/// and how many rows this member filled of every expert and every member
/// filled of this member's experts.
struct Exchange {
  hetcclComm_t group = nullptr;
  int members = 1, me = 0;
  std::vector<int64_t> experts, first; // per member
  std::vector<int64_t> filled;         // [E]: this member's rows per expert
  std::vector<int64_t> got;            // [members][n_me]: rows each member filled of mine
  int64_t held() const { return experts[me]; }
  int64_t from(int s, int64_t e) const { return got[s * held() + e]; }
};

Exchange prepare(const KernelCall &call, const char *what, int64_t experts, int64_t capacity) {
  PipelineComm &comm = pipelineComm();
  Exchange x;
  x.group = comm.communicator(call.attribute(0));
  int64_t members = call.attribute(1);
  for (int64_t m = 0; m < members; ++m)
    x.experts.push_back(call.attribute(static_cast<int>(2 + m)));
  x.members = static_cast<int>(members);
  if (x.group) {
    int size = 0;
    checkCcl(hetcclCommCount(x.group, &size), "counting the expert-parallel group", x.group);
    if (size != x.members)
      throw std::runtime_error("internal error: " + std::string(what) + " for " +
                               std::to_string(x.members) + " members over a group of " +
                               std::to_string(size));
    checkCcl(hetcclCommUserRank(x.group, &x.me), "the rank in the expert-parallel group",
             x.group);
  } else {
    // One member, or --profile-stages (no communication): this replica.
    x.me = comm.place.replica >= 0 && comm.place.replica < x.members ? comm.place.replica : 0;
  }
  x.first.assign(x.members, 0);
  for (int m = 1; m < x.members; ++m)
    x.first[m] = x.first[m - 1] + x.experts[m - 1];
  if (x.members == 0 || x.first.back() + x.experts.back() != experts)
    throw std::runtime_error(std::string("internal error: ") + what + " over " +
                             std::to_string(x.members) + " members for " +
                             std::to_string(experts) + " experts");
  het::eval::Tensor<int64_t> indices(call.operandShape(1));
  std::memcpy(indices.data.data(), call.indices(1), indices.data.size() * sizeof(int64_t));
  x.filled = het::eval::moeFilledRows(indices, experts, capacity);
  // Counts first: member r gets my counts of its experts.
  x.got.assign(static_cast<size_t>(x.members * x.held()), 0);
  if (!x.group) {
    // Alone, or profiling a stage apart: as if every member routed like
    // this one (capped by what a member can send).
    for (int s = 0; s < x.members; ++s)
      for (int64_t e = 0; e < x.held(); ++e)
        x.got[s * x.held() + e] = x.filled[x.first[x.me] + e];
    return x;
  }
  std::vector<size_t> sendCounts(x.members), sendOffsets(x.members), recvCounts(x.members),
      recvOffsets(x.members);
  for (int r = 0; r < x.members; ++r) {
    sendCounts[r] = static_cast<size_t>(x.experts[r]);
    sendOffsets[r] = static_cast<size_t>(x.first[r]);
    recvCounts[r] = static_cast<size_t>(x.held());
    recvOffsets[r] = static_cast<size_t>(r * x.held());
  }
  checkCcl(hetcclAllToAllV(x.filled.data(), sendCounts.data(), sendOffsets.data(), x.got.data(),
                           recvCounts.data(), recvOffsets.data(), hetcclInt64, x.group),
           std::string("the row counts of ") + what + " of stage " +
               std::to_string(pipelineComm().place.stage),
           x.group);
  return x;
}

/// The rows in bytes.
void moveRows(const Exchange &x, const char *what, const uint8_t *send,
              const std::vector<size_t> &sendBytes, uint8_t *receive,
              const std::vector<size_t> &recvBytes) {
  std::vector<size_t> sendOffsets(x.members, 0), recvOffsets(x.members, 0);
  for (int r = 1; r < x.members; ++r) {
    sendOffsets[r] = sendOffsets[r - 1] + sendBytes[r - 1];
    recvOffsets[r] = recvOffsets[r - 1] + recvBytes[r - 1];
  }
  PipelineComm &comm = pipelineComm();
  commTrace().collective(what, comm.members(0),
                         std::accumulate(sendBytes.begin(), sendBytes.end(), size_t(0)));
  checkCcl(hetcclAllToAllV(send, sendBytes.data(), sendOffsets.data(), receive, recvBytes.data(),
                           recvOffsets.data(), hetcclUint8, x.group),
           std::string(what) + " of stage " + std::to_string(comm.place.stage), x.group);
}

/// Operands: rows [E, C, X], indices [T, k]; results: rows [n_me, R, X],
/// counts [n_me].
void toExperts(const int64_t *meta, void *const *buffers) {
  KernelCall call(meta, buffers);
  const std::vector<int64_t> &in = call.operandShape(0), &out = call.resultShape(0);
  int64_t E = in.at(0), C = in.at(1), R = out.at(1);
  size_t row = static_cast<size_t>(product(in) / (E * C)) * elementBytes(call.operandFormat(0));
  Exchange x = prepare(call, "expert all-to-all", E, C);
  if (out.at(0) != x.held())
    throw std::runtime_error("internal error: member " + std::to_string(x.me) + " holds " +
                             std::to_string(x.held()) + " experts, its code " +
                             std::to_string(out[0]));
  const auto *rows = static_cast<const uint8_t *>(buffers[0]);
  auto *result = static_cast<uint8_t *>(buffers[2]);
  auto *counts = static_cast<int64_t *>(buffers[3]);
  std::memset(result, 0, static_cast<size_t>(x.held() * R) * row);
  // Senders in order, per expert of mine: where member s's rows start.
  std::vector<int64_t> offset(x.held(), 0);
  for (int64_t e = 0; e < x.held(); ++e)
    for (int s = 0; s < x.members; ++s)
      offset[e] += x.from(s, e);
  for (int64_t e = 0; e < x.held(); ++e) {
    // (Profiling a stage apart, the other members' rows are this one's
    // again, up to what the experts can take.)
    if (!x.group)
      offset[e] = std::min(offset[e], R);
    if (offset[e] > R)
      throw std::runtime_error("expert " + std::to_string(x.first[x.me] + e) + " got " +
                               std::to_string(offset[e]) + " rows, more than the " +
                               std::to_string(R) + " its stage was compiled for");
    counts[e] = offset[e];
  }
  if (!x.group) {
    for (int64_t e = 0; e < x.held(); ++e)
      std::memcpy(result + e * R * row, rows + (x.first[x.me] + e) * C * row,
                  x.filled[x.first[x.me] + e] * row);
    return;
  }
  // Pack: each member's experts' filled rows, expert by expert.
  std::vector<size_t> sendBytes(x.members, 0), recvBytes(x.members, 0);
  std::vector<uint8_t> send;
  for (int r = 0; r < x.members; ++r)
    for (int64_t e = x.first[r]; e < x.first[r] + x.experts[r]; ++e) {
      send.insert(send.end(), rows + e * C * row, rows + (e * C + x.filled[e]) * row);
      sendBytes[r] += x.filled[e] * row;
    }
  for (int s = 0; s < x.members; ++s)
    for (int64_t e = 0; e < x.held(); ++e)
      recvBytes[s] += x.from(s, e) * row;
  std::vector<uint8_t> received(
      std::accumulate(recvBytes.begin(), recvBytes.end(), size_t(0)));
  moveRows(x, "expert all-to-all (to the experts)", send.data(), sendBytes, received.data(),
           recvBytes);
  // Unpack: member s's rows of expert e after those of the members before.
  const uint8_t *cursor = received.data();
  std::vector<int64_t> at(x.held(), 0);
  for (int s = 0; s < x.members; ++s)
    for (int64_t e = 0; e < x.held(); ++e) {
      size_t bytes = x.from(s, e) * row;
      std::memcpy(result + (e * R + at[e]) * row, cursor, bytes);
      at[e] += x.from(s, e);
      cursor += bytes;
    }
}

/// Operands: rows [n_me, R, X] laid out as toExperts leaves them, indices
/// [T, k]; result: this member's rows [E, C, X].
void fromExperts(const int64_t *meta, void *const *buffers) {
  KernelCall call(meta, buffers);
  const std::vector<int64_t> &in = call.operandShape(0), &out = call.resultShape(0);
  int64_t E = out.at(0), C = out.at(1), R = in.at(1);
  size_t row = static_cast<size_t>(product(out) / (E * C)) * elementBytes(call.resultFormat(0));
  Exchange x = prepare(call, "expert all-to-all back", E, C);
  if (in.at(0) != x.held())
    throw std::runtime_error("internal error: member " + std::to_string(x.me) + " holds " +
                             std::to_string(x.held()) + " experts, its code " +
                             std::to_string(in[0]));
  const auto *rows = static_cast<const uint8_t *>(buffers[0]);
  auto *result = static_cast<uint8_t *>(buffers[2]);
  std::memset(result, 0, static_cast<size_t>(E * C) * row);
  if (!x.group) {
    for (int64_t e = 0; e < x.held(); ++e)
      std::memcpy(result + (x.first[x.me] + e) * C * row, rows + e * R * row,
                  x.filled[x.first[x.me] + e] * row);
    return;
  }
  // Pack: for each member, its rows of each of my experts.
  std::vector<size_t> sendBytes(x.members, 0), recvBytes(x.members, 0);
  std::vector<uint8_t> send;
  std::vector<int64_t> at(x.held(), 0);
  for (int s = 0; s < x.members; ++s)
    for (int64_t e = 0; e < x.held(); ++e) {
      int64_t n = x.from(s, e);
      if (at[e] + n > R)
        throw std::runtime_error("internal error: expert rows past the compiled capacity");
      send.insert(send.end(), rows + (e * R + at[e]) * row, rows + (e * R + at[e] + n) * row);
      sendBytes[s] += n * row;
      at[e] += n;
    }
  for (int r = 0; r < x.members; ++r)
    for (int64_t e = x.first[r]; e < x.first[r] + x.experts[r]; ++e)
      recvBytes[r] += x.filled[e] * row;
  std::vector<uint8_t> received(
      std::accumulate(recvBytes.begin(), recvBytes.end(), size_t(0)));
  moveRows(x, "expert all-to-all (back)", send.data(), sendBytes, received.data(), recvBytes);
  const uint8_t *cursor = received.data();
  for (int r = 0; r < x.members; ++r)
    for (int64_t e = x.first[r]; e < x.first[r] + x.experts[r]; ++e) {
      std::memcpy(result + e * C * row, cursor, x.filled[e] * row);
      cursor += x.filled[e] * row;
    }
}

/// Generated code has no unwind tables: report a failure and end the rank.
template <typename F> void timed(F &&f, const int64_t *meta, void *const *buffers) {
  auto t0 = std::chrono::steady_clock::now();
  try {
    f(meta, buffers);
  } catch (const std::exception &e) {
    die(e.what());
  }
  commSeconds().collective +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

extern "C" void hetrt_moe_to_experts(const int64_t *meta, void *const *buffers) {
  timed(toExperts, meta, buffers);
}

extern "C" void hetrt_moe_from_experts(const int64_t *meta, void *const *buffers) {
  timed(fromExperts, meta, buffers);
}
