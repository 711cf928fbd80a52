//===- NumberFormats.h - which number format each device kind trains in -*- C++ -*-===//
//
// A heterogeneous job trains each device kind in the best format it has:
// bf16 where the kind has it, fp16 with loss scaling where it does not
// (V100, T4, Ascend 910A), fp32 where it has neither. A kind has a format
// when its catalog entry gives a peak for it (`peak_tflops`), or, for the
// measured local CPU, when het's CPU code runs it (docs/precision.md).
//
//===----------------------------------------------------------------------===//
#ifndef HET_PLAN_NUMBERFORMATS_H
#define HET_PLAN_NUMBERFORMATS_H

#include <string>
#include <vector>

namespace het::plan {

struct DeviceSpec;

/// The number formats a job trains in (het-plan --precision).
enum class Precision {
  Auto,  // fp32 for an fp32 model, else Mixed
  FP32,  // everything in fp32 on every kind
  Mixed, // per kind: bf16, else fp16 (with loss scaling), else fp32
  BF16,  // bf16 on every kind (a kind without it is an error)
  FP16,  // fp16 with loss scaling on every kind (likewise)
};
const char *toString(Precision p);
bool parsePrecision(const std::string &text, Precision &out);

/// Bytes of one element of `format` (fp32, tf32, bf16, fp16, fp8); 0 if unknown.
int formatBytes(const std::string &format);
/// Whether `format` is one the planner and plan files name.
bool knownFormat(const std::string &format);

/// The format `spec` trains in under `precision` for a model whose compute
/// dtype is `modelDtype`; empty when `precision` forces a format the kind
/// lacks (then `problem` says which and what it has).
std::string chooseFormat(const DeviceSpec &spec, Precision precision,
                         const std::string &modelDtype, std::string &problem);

/// "fp32, fp16": the formats `spec` has, for messages.
std::string formatList(const DeviceSpec &spec);

} // namespace het::plan

#endif
