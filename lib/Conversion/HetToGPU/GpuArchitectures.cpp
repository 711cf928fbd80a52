//===- GpuArchitectures.cpp - the GPU targets het compiles for -------------===//
//
// Part of the CPU code generator's library: convert-het-to-runtime checks a
// pipeline's GPU stages against this table before anything is built, so a
// device kind het cannot compile for is an error naming the stage.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::het;

namespace {

// The architectures of the device catalog's GPUs (A100; H100/H200;
// MI250X; MI300X) and NVIDIA's consumer parts. ptxas of CUDA 13 rejects
// sm_50/sm_70, and LLVM 19 knows no sm_100: newer NVIDIA GPUs would run the
// PTX a fatbin embeds.
struct VendorTarget {
  StringRef target, vendorName;
  GpuVendor vendor;
  SmallVector<StringRef> archs; // the first is the default
};

SmallVector<VendorTarget> vendorTargets() {
  return {{"cuda", "NVIDIA", GpuVendor::Nvidia, {"sm_80", "sm_86", "sm_89", "sm_90"}},
          {"hip", "AMD", GpuVendor::Amd, {"gfx90a", "gfx942"}}};
}

} // namespace

llvm::Expected<GpuTarget> mlir::het::parseGpuTarget(StringRef target, StringRef arch) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  for (const VendorTarget &known : vendorTargets()) {
    if (known.target != target)
      continue;
    GpuTarget result;
    result.vendor = known.vendor;
    result.arch = arch.empty() ? known.archs.front().str() : arch.str();
    if (!llvm::is_contained(known.archs, StringRef(result.arch)))
      return error("--gpu-arch=" + result.arch + " is not an " + known.vendorName +
                   " architecture het compiles for (" + llvm::join(known.archs, ", ") + ")");
    return result;
  }
  return error("--target=" + target + " is not a GPU target (cuda or hip)");
}

std::string GpuTarget::label() const { return (runtimeName() + " " + arch).str(); }

StringRef GpuTarget::runtimeName() const { return vendor == GpuVendor::Nvidia ? "cuda" : "hip"; }

llvm::Expected<GpuTarget> mlir::het::gpuTargetOfKind(StringRef vendor, StringRef arch) {
  StringRef target = vendor == "nvidia" ? "cuda" : vendor == "amd" ? "hip" : "";
  if (target.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "het generates code for CPUs and for NVIDIA and AMD GPUs only");
  for (const VendorTarget &known : vendorTargets())
    if (known.target == target && !llvm::is_contained(known.archs, arch))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "het compiles " + known.vendorName + " kernels for " +
                                         llvm::join(known.archs, ", ") + ", not " + arch);
  return parseGpuTarget(target, arch);
}

llvm::Expected<GpuTarget> mlir::het::parseGpuTargetLabel(StringRef label) {
  auto [target, arch] = label.split(' ');
  if (arch.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "GPU target '" + label + "' is not '<cuda|hip> <arch>'");
  return parseGpuTarget(target, arch);
}
