//===- NumberFormats.cpp - which number format each device kind trains in -===//
#include "het/Plan/NumberFormats.h"

#include "het/Plan/DeviceCatalog.h"

namespace het::plan {

const char *toString(Precision p) {
  switch (p) {
  case Precision::Auto:
    return "auto";
  case Precision::FP32:
    return "fp32";
  case Precision::Mixed:
    return "mixed";
  case Precision::BF16:
    return "bf16";
  case Precision::FP16:
    return "fp16";
  }
  return "auto";
}

bool parsePrecision(const std::string &text, Precision &out) {
  for (auto p : {Precision::Auto, Precision::FP32, Precision::Mixed, Precision::BF16,
                 Precision::FP16})
    if (text == toString(p)) {
      out = p;
      return true;
    }
  return false;
}

int formatBytes(const std::string &format) {
  if (format == "fp32" || format == "tf32")
    return 4;
  if (format == "bf16" || format == "fp16")
    return 2;
  if (format == "fp8")
    return 1;
  return 0;
}

bool knownFormat(const std::string &format) { return formatBytes(format) > 0; }

std::string formatList(const DeviceSpec &spec) {
  std::string out;
  for (const std::string &f : spec.formats())
    out += (out.empty() ? "" : ", ") + f;
  return out.empty() ? "none" : out;
}

std::string chooseFormat(const DeviceSpec &spec, Precision precision,
                         const std::string &modelDtype, std::string &problem) {
  if (precision == Precision::Auto)
    precision = formatBytes(modelDtype) >= 4 ? Precision::FP32 : Precision::Mixed;
  auto forced = [&](const std::string &format) -> std::string {
    if (spec.hasFormat(format))
      return format;
    problem = "has no " + format + " (its catalog entry's peak_tflops gives " +
              formatList(spec) + ")";
    if (format == "bf16" && spec.hasFormat("fp16"))
      problem += "; --precision mixed trains it in fp16 with loss scaling";
    return "";
  };
  switch (precision) {
  case Precision::FP32:
    return forced("fp32");
  case Precision::BF16:
    return forced("bf16");
  case Precision::FP16:
    return forced("fp16");
  case Precision::Auto:
  case Precision::Mixed:
    break;
  }
  // bf16 first (the range of fp32: no loss scaling), then fp16 with
  // loss scaling, then fp32.
  for (const char *f : {"bf16", "fp16", "fp32"})
    if (spec.hasFormat(f))
      return f;
  problem = "has none of bf16, fp16 or fp32 (its catalog entry's peak_tflops gives " +
            formatList(spec) + ")";
  return "";
}

} // namespace het::plan
