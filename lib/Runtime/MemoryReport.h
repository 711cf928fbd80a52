//===- MemoryReport.h - what a run held in memory ----------------*- C++ -*-===//
#ifndef HET_LIB_RUNTIME_MEMORYREPORT_H
#define HET_LIB_RUNTIME_MEMORYREPORT_H

#include <string>

namespace het::rt {

/// "peak 12.3 MiB of buffers, peak resident 45.6 MiB": the peak of the
/// buffers the runtime and the compiled step held at once (parameters,
/// gradients, optimizer state, activations, temporaries:
/// Gpu/HostVisibleMemory.h) and the process's peak resident set (the
/// kernel's count, getrusage: code, libraries, oneDNN's scratchpads and
/// caches, message staging, and memory freed but not returned).
std::string memoryReport();

/// --profile-memory: where the peak of the buffers comes from, "peak of
/// buffers 0.255 MiB in step 0, backward of micro-batch 1: parameters
/// 0.029 MiB (11%), ..." (each use that held any, largest first; see
/// MemoryUse), and what the resident set holds beyond the buffers (code,
/// libraries, the kernel libraries' workspace and caches, message staging).
std::string memoryProfile();

} // namespace het::rt

#endif
