#include "Exact.h"

#include "Types/DataType.h"

#include <algorithm>

namespace hetccltest {

size_t typeSize(hetcclDataType_t t) { return hetccl::dtypeSize(t); }

void put(hetcclDataType_t t, void* buf, size_t i, int64_t v) {
  switch (t) {
  case hetcclFloat32: static_cast<float*>(buf)[i] = float(v); break;
  case hetcclFloat64: static_cast<double*>(buf)[i] = double(v); break;
  case hetcclFloat16: static_cast<uint16_t*>(buf)[i] = hetccl::floatToHalf(float(v)); break;
  case hetcclBfloat16: static_cast<uint16_t*>(buf)[i] = hetccl::floatToBf16(float(v)); break;
  case hetcclInt8: static_cast<int8_t*>(buf)[i] = int8_t(uint8_t(v)); break;
  case hetcclUint8: static_cast<uint8_t*>(buf)[i] = uint8_t(v); break;
  case hetcclInt32: static_cast<int32_t*>(buf)[i] = int32_t(uint32_t(v)); break;
  case hetcclInt64: static_cast<int64_t*>(buf)[i] = v; break;
  default: break;
  }
}

void putAvg(hetcclDataType_t t, void* buf, size_t i, int64_t sum, int n) {
  switch (t) {
  case hetcclFloat32: static_cast<float*>(buf)[i] = float(sum) / float(n); break;
  case hetcclFloat64: static_cast<double*>(buf)[i] = double(sum) / double(n); break;
  case hetcclFloat16:
    static_cast<uint16_t*>(buf)[i] = hetccl::floatToHalf(float(sum) / float(n));
    break;
  case hetcclBfloat16:
    static_cast<uint16_t*>(buf)[i] = hetccl::floatToBf16(float(sum) / float(n));
    break;
  case hetcclInt8: static_cast<int8_t*>(buf)[i] = int8_t(int8_t(sum) / n); break;
  case hetcclUint8: static_cast<uint8_t*>(buf)[i] = uint8_t(uint8_t(sum) / n); break;
  case hetcclInt32: static_cast<int32_t*>(buf)[i] = int32_t(sum / n); break;
  case hetcclInt64: static_cast<int64_t*>(buf)[i] = sum / n; break;
  default: break;
  }
}

void expectReduce(hetcclDataType_t t, hetcclRedOp_t op, int n, void* buf, size_t i) {
  int64_t acc = genReduce(op, 0, i);
  uint64_t prod = uint64_t(acc);
  for (int r = 1; r < n; ++r) {
    int64_t v = genReduce(op, r, i);
    switch (op) {
    case hetcclSum:
    case hetcclAvg: acc += v; break;
    case hetcclProd: prod *= uint64_t(v); break;
    case hetcclMin: acc = std::min(acc, v); break;
    case hetcclMax: acc = std::max(acc, v); break;
    default: break;
    }
  }
  if (op == hetcclProd) acc = int64_t(prod);
  if (op == hetcclAvg)
    putAvg(t, buf, i, acc, n);
  else
    put(t, buf, i, acc);
}

} // namespace hetccltest
