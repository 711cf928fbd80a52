//===- TargetMachine.cpp - the host target, LLVM's pipeline, object emission -===//
//
// One module, one thread: what het-compile did in-line before code
// generation was split per function (ParallelCodegen.cpp runs these per
// unit, each on its own thread with its own target machine).
//
//===----------------------------------------------------------------------===//

#include "het/Target/NativeCodegen.h"

#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <mutex>

using namespace het::target;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::CodeGenOptLevel codegenLevel(char optLevel) {
  switch (optLevel) {
  case '0': return llvm::CodeGenOptLevel::None;
  case '1': return llvm::CodeGenOptLevel::Less;
  case '2': return llvm::CodeGenOptLevel::Default;
  default: return llvm::CodeGenOptLevel::Aggressive;
  }
}

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// Vector variants of the math functions generated loops call, from glibc's
/// libmvec (linked into every executable): LLVM's own libmvec table, plus
/// the ones glibc 2.35 added that LLVM 19 does not list -- tanh (GELU) and
/// erf (exact GELU). Without them each element of a GELU or softmax is a
/// scalar libm call: a third of a transformer step's time.
void addVectorMath(llvm::TargetLibraryInfoImpl &library, const llvm::Triple &triple) {
  library.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86, triple);
  static const llvm::VecDesc glibc235[] = {
      {"tanhf", "_ZGVbN4v_tanhf", llvm::ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
      {"tanhf", "_ZGVdN8v_tanhf", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      {"erff", "_ZGVbN4v_erff", llvm::ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
      {"erff", "_ZGVdN8v_erff", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      // AVX-512 variants (glibc's 'e' ISA), for loops vectorized 16 wide.
      {"tanhf", "_ZGVeN16v_tanhf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"erff", "_ZGVeN16v_erff", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"expf", "_ZGVeN16v_expf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"logf", "_ZGVeN16v_logf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"llvm.exp.f32", "_ZGVeN16v_expf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"llvm.log.f32", "_ZGVeN16v_logf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
  };
  library.addVectorizableFunctions(glibc235);
}

} // namespace

llvm::Expected<NativeTarget> het::target::hostTarget(const std::string &mcpu, char optLevel) {
  initializeNativeTarget();
  NativeTarget target;
  target.triple = llvm::sys::getDefaultTargetTriple();
  if (!llvm::StringRef(target.triple).starts_with("x86_64"))
    return error("this host's triple is " + target.triple + "; only x86_64 code is generated");
  target.optLevel = optLevel;
  if (mcpu == "native") {
    target.cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures subtarget;
    for (auto &feature : llvm::sys::getHostCPUFeatures())
      subtarget.AddFeature(feature.first(), feature.second);
    // Generated loops run 16 lanes wide where the core has AVX-512: LLVM's
    // tuning for recent Intel server cores prefers 256-bit vectors (a
    // frequency penalty older cores paid), which halves element-wise speed.
    if (llvm::sys::getHostCPUFeatures().lookup("avx512f"))
      subtarget.AddFeature("prefer-256-bit", false);
    target.features = subtarget.getString();
  } else {
    target.cpu = mcpu;
  }
  return target;
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
het::target::createTargetMachine(const NativeTarget &target) {
  initializeNativeTarget();
  std::string message;
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(target.triple, message);
  if (!llvmTarget)
    return error("no LLVM target for " + target.triple + ": " + message);
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      target.triple, target.cpu, target.features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, codegenLevel(target.optLevel)));
  if (!machine)
    return error("could not create a target machine for " + target.triple + " (" + target.cpu +
                 ")");
  return machine;
}

void het::target::prepareModule(llvm::Module &module, llvm::TargetMachine &machine) {
  module.setTargetTriple(machine.getTargetTriple().str());
  module.setDataLayout(machine.createDataLayout());
}

void het::target::optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                                 char optLevel) {
  if (optLevel == '0')
    return;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&machine, tuning);
  // Registered before the defaults, so it is the library info every pass
  // sees.
  llvm::TargetLibraryInfoImpl library(machine.getTargetTriple());
  addVectorMath(library, machine.getTargetTriple());
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(library); });
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel == '1'   ? llvm::OptimizationLevel::O1
                                  : optLevel == '2' ? llvm::OptimizationLevel::O2
                                                    : llvm::OptimizationLevel::O3;
  builder.buildPerModuleDefaultPipeline(level).run(module, mam);
}

llvm::Error het::target::emitObject(llvm::Module &module, llvm::TargetMachine &machine,
                                    llvm::raw_pwrite_stream &os) {
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return error("the target machine cannot emit object files");
  codegen.run(module);
  return llvm::Error::success();
}
