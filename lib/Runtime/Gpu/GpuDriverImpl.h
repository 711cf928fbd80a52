//===- GpuDriverImpl.h - shared by the vendor drivers ------------*- C++ -*-===//
#ifndef HET_LIB_RUNTIME_GPU_GPUDRIVERIMPL_H
#define HET_LIB_RUNTIME_GPU_GPUDRIVERIMPL_H

#include "GpuDriver.h"

#include <memory>

namespace het::rt::gpu {

/// Ends the process with "error: <message>" (no GPU work can go on).
[[noreturn]] void fail(const std::string &message);

/// This process's device among `count`: LOCAL_RANK (het-run, torchrun)
/// modulo `count`, else 0.
int localDeviceIndex(int count);

std::unique_ptr<Driver> startCuda(const std::string &target);
std::unique_ptr<Driver> startHip(const std::string &target);

} // namespace het::rt::gpu

#endif
