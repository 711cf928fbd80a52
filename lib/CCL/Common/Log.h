// Diagnostics go to stderr with a "hetccl[rank]" prefix. Security events
// (refused connections) are always logged; debug lines only when
// HETCCL_DEBUG=1.
#pragma once

namespace hetccl {

void logWarn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void logDebug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void setLogRank(int rank);

} // namespace hetccl
