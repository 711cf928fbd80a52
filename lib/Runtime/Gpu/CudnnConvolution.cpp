//===- CudnnConvolution.cpp - a GPU step's convolutions on cuDNN -----------===//
//
// With the `cudnn` kernel library (NVIDIA targets, het-compile's default
// --gpu-libraries=vendor) het.conv2d and its two gradients become
//
//   hetrt_cudnn_conv2d(meta, buffers)             x, w[, bias] -> y
//   hetrt_cudnn_conv2d_grad_input(meta, buffers)  dy, w -> dx
//   hetrt_cudnn_conv2d_grad_filter(meta, buffers) dy, x -> dw
//
// with the calling convention of hetrt_dnnl_* (KernelCall.h; row-major NCHW
// buffers, attributes: strides, padding, dilation (1 = dense), groups).
//
// On a GPU process: cuDNN's convolution API, opened with dlopen
// (libcudnn.so.9, or $HET_CUDNN_LIBRARY) on the process's stream. Each call
// site's descriptors, algorithm and workspace are made at its first call
// and kept (the meta words are a constant per site). Algorithms come from
// cuDNN's heuristics (the *_v7 queries), the first deterministic one that
// supports the shape with at most 256 MiB of workspace. f32 convolutions
// run in FP32 arithmetic (CUDNN_FMA_MATH: no TF32, so the results stay
// within 1e-4 of the CPU build's). Mixed precision (a bf16 or f16 x, w and
// y, bits 40-47 of the rank words) runs cuDNN's PSEUDO_BFLOAT16/HALF
// configuration: 16-bit tensors, f32 arithmetic (the convolution
// descriptor's compute type), tensor-core algorithms allowed
// (CUDNN_TENSOR_OP_MATH), the output rounded once -- how PyTorch's CUDA
// autocast runs a convolution. The stream is synchronized after the call,
// as after every kernel.
//
// In a host emulation (--gpu-emulate: no driver) the same call runs the
// oneDNN kernel of the same convention on the host, on f32 buffers (16-bit
// operands widened exactly, the f32 result rounded once to the format): the
// emulated step then checks what the compiler passes (shapes, attributes,
// operand order, formats) against the CPU build; cuDNN itself runs only on
// a GPU.
//
//===----------------------------------------------------------------------===//

#include "../KernelCall.h"
#include "Types/DataType.h" // hetccl: the 16-bit conversions
#include "GpuDriverImpl.h"

#include <array>
#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

extern "C" {
void hetrt_dnnl_conv2d(const int64_t *meta, void *const *buffers);
void hetrt_dnnl_conv2d_grad_input(const int64_t *meta, void *const *buffers);
void hetrt_dnnl_conv2d_grad_filter(const int64_t *meta, void *const *buffers);
}

using namespace het::rt;
using namespace het::rt::gpu;

namespace {

// cuDNN's C API, declared here: its headers are not needed to build
// libhetrt. Descriptors are opaque pointers; enums are ints.
using Handle = void *;
using Descriptor = void *;
using Status = int;
constexpr int kNchw = 0, kCrossCorrelation = 1, kDeterministic = 1;
// cudnnDataType_t and cudnnMathType_t.
constexpr int kFloat = 0, kHalf = 2, kBfloat16 = 9;
constexpr int kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3;
constexpr size_t kMaxWorkspaceBytes = size_t(256) << 20;

/// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: the same layout.
struct AlgorithmPerformance {
  int algorithm;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};

struct Cudnn {
  Status (*create)(Handle *);
  Status (*setStream)(Handle, void *);
  const char *(*errorString)(Status);
  Status (*createTensor)(Descriptor *);
  Status (*setTensor4d)(Descriptor, int, int, int, int, int, int);
  Status (*createFilter)(Descriptor *);
  Status (*setFilter4d)(Descriptor, int, int, int, int, int, int);
  Status (*createConvolution)(Descriptor *);
  Status (*setConvolution2d)(Descriptor, int, int, int, int, int, int, int, int);
  Status (*setGroupCount)(Descriptor, int);
  Status (*setMathType)(Descriptor, int);
  using Query = Status (*)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int, int *,
                           AlgorithmPerformance *);
  using WorkspaceSize = Status (*)(Handle, Descriptor, Descriptor, Descriptor, Descriptor, int,
                                   size_t *);
  Query forwardAlgorithms, backwardDataAlgorithms, backwardFilterAlgorithms;
  WorkspaceSize forwardWorkspace, backwardDataWorkspace, backwardFilterWorkspace;
  // (handle, alpha, a descriptor, a, b descriptor, b, convolution, algorithm,
  // workspace, bytes, beta, out descriptor, out)
  using Run = Status (*)(Handle, const void *, Descriptor, const void *, Descriptor,
                         const void *, Descriptor, int, void *, size_t, const void *,
                         Descriptor, void *);
  Run forward, backwardData, backwardFilter;
  Status (*addTensor)(Handle, const void *, Descriptor, const void *, const void *, Descriptor,
                      void *);
  Handle handle = nullptr;

  void check(Status status, const char *call) const {
    if (status != 0)
      fail(std::string(call) + " failed: " + (errorString ? errorString(status) : "status") +
           " (" + std::to_string(status) + ")");
  }
};

Cudnn &cudnn(Driver &driver) {
  static Cudnn library{};
  static std::once_flag opened;
  std::call_once(opened, [&] {
    const char *override = std::getenv("HET_CUDNN_LIBRARY");
    const char *path = override && *override ? override : "libcudnn.so.9";
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      fail(std::string("this step's convolutions run on cuDNN, which could not be loaded: ") +
           (why ? why : path) +
           " (install cuDNN 9 -- the CUDA toolkit's or PyTorch's --, name it with "
           "$HET_CUDNN_LIBRARY, or compile with --gpu-libraries=generated)");
    }
    auto bind = [&](auto &function, const char *symbol) {
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(
          dlsym(handle, symbol));
      if (!function)
        fail(std::string("cuDNN lacks ") + symbol);
    };
    bind(library.create, "cudnnCreate");
    bind(library.setStream, "cudnnSetStream");
    bind(library.errorString, "cudnnGetErrorString");
    bind(library.createTensor, "cudnnCreateTensorDescriptor");
    bind(library.setTensor4d, "cudnnSetTensor4dDescriptor");
    bind(library.createFilter, "cudnnCreateFilterDescriptor");
    bind(library.setFilter4d, "cudnnSetFilter4dDescriptor");
    bind(library.createConvolution, "cudnnCreateConvolutionDescriptor");
    bind(library.setConvolution2d, "cudnnSetConvolution2dDescriptor");
    bind(library.setGroupCount, "cudnnSetConvolutionGroupCount");
    bind(library.setMathType, "cudnnSetConvolutionMathType");
    bind(library.forwardAlgorithms, "cudnnGetConvolutionForwardAlgorithm_v7");
    bind(library.backwardDataAlgorithms, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    bind(library.backwardFilterAlgorithms, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    bind(library.forwardWorkspace, "cudnnGetConvolutionForwardWorkspaceSize");
    bind(library.backwardDataWorkspace, "cudnnGetConvolutionBackwardDataWorkspaceSize");
    bind(library.backwardFilterWorkspace, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    bind(library.forward, "cudnnConvolutionForward");
    bind(library.backwardData, "cudnnConvolutionBackwardData");
    bind(library.backwardFilter, "cudnnConvolutionBackwardFilter");
    bind(library.addTensor, "cudnnAddTensor");
    library.check(library.create(&library.handle), "cudnnCreate");
    library.check(library.setStream(library.handle, driver.stream()), "cudnnSetStream");
  });
  return library;
}

enum class Direction { Forward, BackwardData, BackwardFilter };

/// One call site: descriptors, the algorithm and its workspace.
struct Site {
  int dataType = kFloat; // x, w and y (the arithmetic is f32 whichever)
  Descriptor x = nullptr, y = nullptr, w = nullptr, convolution = nullptr, bias = nullptr;
  int algorithm = 0;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

/// A call's two inputs and its output, in the order of cuDNN's arguments
/// (its algorithm queries take the same): forward x, w -> y; data gradient
/// w, dy -> dx; filter gradient x, dy -> dw.
std::array<Descriptor, 3> callDescriptors(const Site &s, Direction direction) {
  switch (direction) {
  case Direction::Forward:
    return {s.x, s.w, s.y};
  case Direction::BackwardData:
    return {s.w, s.y, s.x};
  case Direction::BackwardFilter:
    return {s.x, s.y, s.w};
  }
  return {};
}

Descriptor tensor(Cudnn &library, const std::vector<int64_t> &shape, int dataType) {
  Descriptor d = nullptr;
  library.check(library.createTensor(&d), "cudnnCreateTensorDescriptor");
  library.check(library.setTensor4d(d, kNchw, dataType, int(shape[0]), int(shape[1]),
                                    int(shape[2]), int(shape[3])),
                "cudnnSetTensor4dDescriptor");
  return d;
}

/// The site of `meta` made on its first call: x, w, y are the
/// convolution's input, filter and output shapes whichever direction.
Site &siteOf(Driver &driver, Cudnn &library, const int64_t *meta, const KernelCall &c,
             Direction direction, const std::vector<int64_t> &x, const std::vector<int64_t> &w,
             const std::vector<int64_t> &y) {
  static std::mutex mutex;
  static std::map<const int64_t *, Site> sites;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, made] = sites.try_emplace(meta);
  Site &s = it->second;
  if (!made)
    return s;
  // The compiler gives x, w and y one format (hasLowPrecisionKernel).
  ElementFormat format = c.operandFormat(0);
  s.dataType = format == ElementFormat::BF16  ? kBfloat16
               : format == ElementFormat::F16 ? kHalf
                                              : kFloat;
  int mathType = s.dataType == kFloat ? kFmaMath : kTensorOpMath;
  s.x = tensor(library, x, s.dataType);
  s.y = tensor(library, y, s.dataType);
  library.check(library.createFilter(&s.w), "cudnnCreateFilterDescriptor");
  library.check(library.setFilter4d(s.w, s.dataType, kNchw, int(w[0]), int(w[1]), int(w[2]),
                                    int(w[3])),
                "cudnnSetFilter4dDescriptor");
  library.check(library.createConvolution(&s.convolution), "cudnnCreateConvolutionDescriptor");
  library.check(library.setConvolution2d(s.convolution, int(c.attribute(2)), int(c.attribute(3)),
                                         int(c.attribute(0)), int(c.attribute(1)),
                                         int(c.attribute(4)), int(c.attribute(5)),
                                         kCrossCorrelation, kFloat),
                "cudnnSetConvolution2dDescriptor");
  library.check(library.setGroupCount(s.convolution, int(c.attribute(6))),
                "cudnnSetConvolutionGroupCount");
  library.check(library.setMathType(s.convolution, mathType), "cudnnSetConvolutionMathType");
  // Each query takes its descriptors in the order of its convolution call.
  Cudnn::Query query = direction == Direction::Forward        ? library.forwardAlgorithms
                       : direction == Direction::BackwardData ? library.backwardDataAlgorithms
                                                              : library.backwardFilterAlgorithms;
  Cudnn::WorkspaceSize size = direction == Direction::Forward ? library.forwardWorkspace
                              : direction == Direction::BackwardData
                                  ? library.backwardDataWorkspace
                                  : library.backwardFilterWorkspace;
  const char *queryName = direction == Direction::Forward
                              ? "cudnnGetConvolutionForwardAlgorithm_v7"
                          : direction == Direction::BackwardData
                              ? "cudnnGetConvolutionBackwardDataAlgorithm_v7"
                              : "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
  auto [a, b, out] = callDescriptors(s, direction);
  AlgorithmPerformance found[16];
  int count = 0;
  library.check(query(library.handle, a, b, s.convolution, out, 16, &count, found), queryName);
  // The site's math (FP32 FMA for f32: no TF32; for 16-bit data any, the
  // tensor cores included: the heuristics list algorithms of every math
  // type, and some shapes -- grouped, depthwise, channels not a multiple of
  // 8 -- have only non-tensor-core ones), and a workspace the site keeps
  // for good: at most kMaxWorkspaceBytes (an FFT algorithm may ask for far
  // more).
  auto usable = [&](const AlgorithmPerformance &p) {
    bool math = s.dataType == kFloat ? p.mathType == kFmaMath
                                     : p.mathType == kFmaMath || p.mathType == kTensorOpMath ||
                                           p.mathType == kDefaultMath;
    return p.status == 0 && math && p.memory <= kMaxWorkspaceBytes;
  };
  int chosen = -1;
  for (int i = 0; i < count && chosen < 0; ++i)
    if (usable(found[i]) && found[i].determinism == kDeterministic)
      chosen = i;
  for (int i = 0; i < count && chosen < 0; ++i)
    if (usable(found[i]))
      chosen = i;
  if (chosen < 0)
    fail(std::string(queryName) + " found no algorithm of this site's math (" +
         (s.dataType == kFloat ? "FP32" : "16-bit data, f32 arithmetic") +
         ") with a workspace of at most 256 MiB for this convolution");
  s.algorithm = found[chosen].algorithm;
  // The descriptor takes the chosen algorithm's math type before its
  // workspace is asked and it runs (cuDNN requires them to agree).
  library.check(library.setMathType(s.convolution, found[chosen].mathType),
                "cudnnSetConvolutionMathType");
  library.check(size(library.handle, a, b, s.convolution, out, s.algorithm, &s.workspaceBytes),
                "cudnnGetConvolution*WorkspaceSize");
  if (s.workspaceBytes)
    s.workspace = driver.allocateManaged(s.workspaceBytes);
  if (direction == Direction::Forward && c.numOperands == 3) {
    if (s.dataType != kFloat) // hasLowPrecisionKernel widens biased ones
      fail("a 16-bit cuDNN convolution with a bias (the compiler computes those in f32)");
    s.bias = tensor(library, {1, y[1], 1, 1}, kFloat);
  }
  return s;
}

/// Host emulation: the oneDNN kernel of the same convention, in f32. A
/// 16-bit call's operands are widened (exact) into f32 copies, the kernel
/// runs on a copy of `meta` whose rank words say f32, and its result is
/// rounded once to the call's format (to nearest, ties to even), which is
/// what cuDNN's f32 arithmetic on 16-bit data computes up to the order of
/// its sums.
void emulate(const int64_t *meta, void *const *buffers, Direction direction) {
  auto kernel = direction == Direction::Forward        ? hetrt_dnnl_conv2d
                : direction == Direction::BackwardData ? hetrt_dnnl_conv2d_grad_input
                                                       : hetrt_dnnl_conv2d_grad_filter;
  KernelCall c(meta, buffers);
  if (c.allF32())
    return kernel(meta, buffers);
  int64_t count = c.numOperands + c.numResults;
  // The f32 meta of this call site, made once: oneDNN's kernels keep their
  // primitives by the meta's address (one per call site).
  static std::mutex mutex;
  static std::map<const int64_t *, std::vector<int64_t>> wideMetas;
  const int64_t *wideMeta;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto [it, made] = wideMetas.try_emplace(meta);
    if (made) {
      std::vector<int64_t> &words = it->second;
      words.assign(meta, meta + 2);
      const int64_t *cursor = meta + 2;
      for (int64_t i = 0; i < count; ++i) {
        int64_t rank = *cursor & 0xffffffff;
        words.push_back(*cursor & ~(int64_t{0xff} << 40)); // ElementFormat::F32
        words.insert(words.end(), cursor + 1, cursor + 1 + rank);
        cursor += 1 + rank;
      }
      // strides, padding, dilation (two words each) and groups
      words.insert(words.end(), cursor, cursor + 7);
    }
    wideMeta = it->second.data();
  }
  std::vector<std::vector<float>> wide(count);
  std::vector<void *> wideBuffers(count);
  for (int64_t i = 0; i < count; ++i) {
    wide[i].resize(product(c.shapes[i]));
    const auto *bits = static_cast<const uint16_t *>(buffers[i]);
    if (i < c.numOperands)
      for (size_t k = 0; k < wide[i].size(); ++k)
        wide[i][k] = c.formats[i] == ElementFormat::BF16 ? hetccl::bf16ToFloat(bits[k])
                     : c.formats[i] == ElementFormat::F16 ? hetccl::halfToFloat(bits[k])
                                                          : static_cast<const float *>(buffers[i])[k];
    wideBuffers[i] = wide[i].data();
  }
  kernel(wideMeta, wideBuffers.data());
  for (int64_t r = 0; r < c.numResults; ++r) {
    int64_t i = c.numOperands + r;
    auto *out = static_cast<uint16_t *>(buffers[i]);
    for (size_t k = 0; k < wide[i].size(); ++k)
      switch (c.formats[i]) {
      case ElementFormat::BF16:
        out[k] = hetccl::floatToBf16(wide[i][k]);
        break;
      case ElementFormat::F16:
        out[k] = hetccl::floatToHalf(wide[i][k]);
        break;
      case ElementFormat::F32:
        static_cast<float *>(buffers[i])[k] = wide[i][k];
        break;
      }
  }
}

/// One convolution call computing `direction`'s result, with the buffers of
/// hetrt_dnnl_conv2d* (forward: x, w[, bias] -> y; data gradient: dy, w ->
/// dx; filter gradient: dy, x -> dw).
void convolve(const int64_t *meta, void *const *buffers, Direction direction) {
  Driver *driver = active();
  if (!driver)
    return emulate(meta, buffers, direction);
  KernelCall c(meta, buffers);
  Cudnn &library = cudnn(*driver);
  bool forward = direction == Direction::Forward, data = direction == Direction::BackwardData;
  // The convolution's input, filter and output shapes, whichever is computed.
  const std::vector<int64_t> &x = forward ? c.operandShape(0)
                                  : data  ? c.resultShape(0)
                                          : c.operandShape(1);
  const std::vector<int64_t> &w = forward || data ? c.operandShape(1) : c.resultShape(0);
  const std::vector<int64_t> &y = forward ? c.resultShape(0) : c.operandShape(0);
  Site &s = siteOf(*driver, library, meta, c, direction, x, w, y);
  // Each call's two inputs and output, in cuDNN's argument order.
  Cudnn::Run run = forward ? library.forward : data ? library.backwardData : library.backwardFilter;
  auto [aDesc, bDesc, outDesc] = callDescriptors(s, direction);
  const float *a = forward ? c.operand(0) : c.operand(1);
  const float *b = forward ? c.operand(1) : c.operand(0);
  const float zero = 0, one = 1;
  library.check(run(library.handle, &one, aDesc, a, bDesc, b, s.convolution, s.algorithm,
                    s.workspace, s.workspaceBytes, &zero, outDesc, c.result(0)),
                forward ? "cudnnConvolutionForward"
                : data  ? "cudnnConvolutionBackwardData"
                        : "cudnnConvolutionBackwardFilter");
  if (s.bias)
    library.check(library.addTensor(library.handle, &one, s.bias, c.operand(2), &one, s.y,
                                    c.result(0)),
                  "cudnnAddTensor");
  driver->synchronize(driver->stream());
}

} // namespace

extern "C" void hetrt_cudnn_conv2d(const int64_t *meta, void *const *buffers) {
  convolve(meta, buffers, Direction::Forward);
}
extern "C" void hetrt_cudnn_conv2d_grad_input(const int64_t *meta, void *const *buffers) {
  convolve(meta, buffers, Direction::BackwardData);
}
extern "C" void hetrt_cudnn_conv2d_grad_filter(const int64_t *meta, void *const *buffers) {
  convolve(meta, buffers, Direction::BackwardFilter);
}
