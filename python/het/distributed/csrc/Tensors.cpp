#include "Tensors.h"

#include <c10/util/Exception.h>

namespace het::torchccl {

static const char* opName(c10d::ReduceOp::RedOpType op) {
  switch (op) {
  case c10d::ReduceOp::SUM: return "SUM";
  case c10d::ReduceOp::AVG: return "AVG";
  case c10d::ReduceOp::PRODUCT: return "PRODUCT";
  case c10d::ReduceOp::MIN: return "MIN";
  case c10d::ReduceOp::MAX: return "MAX";
  case c10d::ReduceOp::BAND: return "BAND";
  case c10d::ReduceOp::BOR: return "BOR";
  case c10d::ReduceOp::BXOR: return "BXOR";
  case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
  default: return "UNUSED";
  }
}

static bool elementType(at::ScalarType t, hetcclDataType_t* out) {
  switch (t) {
  case at::kFloat: *out = hetcclFloat32; return true;
  case at::kDouble: *out = hetcclFloat64; return true;
  case at::kHalf: *out = hetcclFloat16; return true;
  case at::kBFloat16: *out = hetcclBfloat16; return true;
  case at::kChar: *out = hetcclInt8; return true;
  case at::kByte: *out = hetcclUint8; return true;
  case at::kInt: *out = hetcclInt32; return true;
  case at::kLong: *out = hetcclInt64; return true;
  default: return false;
  }
}

Reduction reductionFor(const at::Tensor& tensor, const c10d::ReduceOp& op, const char* collective) {
  Reduction r{};
  switch (op.op_) {
  case c10d::ReduceOp::SUM: r.op = hetcclSum; break;
  case c10d::ReduceOp::AVG: r.op = hetcclAvg; break;
  case c10d::ReduceOp::PRODUCT: r.op = hetcclProd; break;
  case c10d::ReduceOp::MIN: r.op = hetcclMin; break;
  case c10d::ReduceOp::MAX: r.op = hetcclMax; break;
  default:
    TORCH_CHECK_VALUE(false, "hetccl ", collective, ": reduce op ", opName(op.op_),
                      " is not supported (SUM, AVG, PRODUCT, MIN and MAX are)");
  }
  at::ScalarType type = tensor.scalar_type();
  bool sumLike = r.op == hetcclSum || r.op == hetcclAvg;
  if (at::isComplexType(type) && sumLike) type = c10::toRealValueType(type);
  TORCH_CHECK_VALUE(elementType(type, &r.type), "hetccl ", collective, ": dtype ", tensor.scalar_type(),
                    " cannot be reduced with ", opName(op.op_),
                    " (float32/64, float16, bfloat16, int8, uint8, int32 and int64 can; complex with SUM and AVG)");
  return r;
}

HostTensor::HostTensor(const at::Tensor& user) : user_(user) {
  if (user.device().is_cpu() && user.is_contiguous())
    host_ = user;
  else
    host_ = user.contiguous().to(at::kCPU);
}

HostTensor HostTensor::forOutput(const at::Tensor& user) {
  HostTensor h;
  h.user_ = user;
  if (user.device().is_cpu() && user.is_contiguous())
    h.host_ = user;
  else
    h.host_ = at::empty(user.sizes(), user.options().device(at::kCPU).memory_format(at::MemoryFormat::Contiguous));
  return h;
}

size_t HostTensor::reductionCount() const {
  return size_t(host_.numel()) * (at::isComplexType(host_.scalar_type()) ? 2 : 1);
}

void HostTensor::writeBack() const {
  if (!host_.is_same(user_)) user_.copy_(host_);
}

void checkDense(const at::Tensor& tensor, const char* collective) {
  TORCH_CHECK_VALUE(tensor.layout() == at::kStrided, "hetccl ", collective, ": only dense (strided) tensors, got ",
                    tensor.layout());
}

void checkSingleTensor(const std::vector<at::Tensor>& tensors, const char* collective) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "hetccl ", collective,
                    ": one tensor per process (multi-device tensor lists are not supported), got ", tensors.size());
  checkDense(tensors[0], collective);
}

void checkSameTypeAndSize(const at::Tensor& expected, const at::Tensor& actual, const char* collective,
                          const char* what) {
  TORCH_CHECK_VALUE(actual.scalar_type() == expected.scalar_type(), "hetccl ", collective, ": ", what, " has dtype ",
                    actual.scalar_type(), ", expected ", expected.scalar_type());
  TORCH_CHECK_VALUE(actual.numel() == expected.numel(), "hetccl ", collective, ": ", what, " has ", actual.numel(),
                    " elements, expected ", expected.numel());
}

} // namespace het::torchccl
