#include "Types/DataType.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hetccl {

size_t dtypeSize(hetcclDataType_t t) {
  switch (t) {
  case hetcclFloat32: return 4;
  case hetcclFloat64: return 8;
  case hetcclFloat16: return 2;
  case hetcclBfloat16: return 2;
  case hetcclInt8: return 1;
  case hetcclUint8: return 1;
  case hetcclInt32: return 4;
  case hetcclInt64: return 8;
  default: return 0;
  }
}

const char* dtypeName(hetcclDataType_t t) {
  static const char* names[] = {"f32", "f64", "f16", "bf16", "i8", "u8", "i32", "i64"};
  return dtypeValid(t) ? names[t] : "invalid";
}

const char* opName(hetcclRedOp_t op) {
  static const char* names[] = {"sum", "prod", "min", "max", "avg"};
  return opValid(op) ? names[op] : "invalid";
}

bool dtypeValid(int t) { return t >= 0 && t < hetcclNumTypes; }
bool opValid(int op) { return op >= 0 && op < hetcclNumOps; }

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { // subnormal: renormalise
      int e = -1;
      do {
        e++;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) // inf or nan
    return uint16_t(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
  if (absx >= 0x47800000) // >= 65536: inf (65520..65536 round up to inf below)
    return uint16_t(sign | 0x7c00);
  if (absx < 0x38800000) { // result is subnormal or zero
    // Scale into the subnormal range with one float add, which rounds to
    // nearest even in hardware.
    float a;
    memcpy(&a, &absx, 4);
    a += 0.5f;
    uint32_t r;
    memcpy(&r, &a, 4);
    return uint16_t(sign | (r - 0x3f000000));
  }
  uint32_t mant_odd = (absx >> 13) & 1;
  absx += 0xc8000fff + mant_odd; // rebias exponent and round to nearest even
  return uint16_t(sign | (absx >> 13));
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40); // quiet nan
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

namespace {

template <typename T> struct Sum { static T apply(T a, T b) { return a + b; } };
template <typename T> struct Prod { static T apply(T a, T b) { return a * b; } };
template <typename T> struct Min { static T apply(T a, T b) { return b < a ? b : a; } };
template <typename T> struct Max { static T apply(T a, T b) { return b > a ? b : a; } };

// Integers: compute sum/prod in the unsigned type of the same width.
template <typename T, typename U> struct USum {
  static T apply(T a, T b) { return T(U(a) + U(b)); }
};
template <typename T, typename U> struct UProd {
  static T apply(T a, T b) { return T(U(a) * U(b)); }
};

template <typename T, typename Op> void kernel(void* acc, const void* in, size_t n) {
  T* a = static_cast<T*>(acc);
  const T* b = static_cast<const T*>(in);
  for (size_t i = 0; i < n; ++i) a[i] = Op::apply(a[i], b[i]);
}

template <typename Op, float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void kernel16(void* acc, const void* in, size_t n) {
  uint16_t* a = static_cast<uint16_t*>(acc);
  const uint16_t* b = static_cast<const uint16_t*>(in);
  for (size_t i = 0; i < n; ++i) a[i] = FromF(Op::apply(ToF(a[i]), ToF(b[i])));
}

template <typename T, typename U> ReduceFn intFn(hetcclRedOp_t op) {
  switch (op) {
  case hetcclSum:
  case hetcclAvg: return kernel<T, USum<T, U>>;
  case hetcclProd: return kernel<T, UProd<T, U>>;
  case hetcclMin: return kernel<T, Min<T>>;
  case hetcclMax: return kernel<T, Max<T>>;
  default: return nullptr;
  }
}

template <typename T> ReduceFn floatFn(hetcclRedOp_t op) {
  switch (op) {
  case hetcclSum:
  case hetcclAvg: return kernel<T, Sum<T>>;
  case hetcclProd: return kernel<T, Prod<T>>;
  case hetcclMin: return kernel<T, Min<T>>;
  case hetcclMax: return kernel<T, Max<T>>;
  default: return nullptr;
  }
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)> ReduceFn halfFn(hetcclRedOp_t op) {
  switch (op) {
  case hetcclSum:
  case hetcclAvg: return kernel16<Sum<float>, ToF, FromF>;
  case hetcclProd: return kernel16<Prod<float>, ToF, FromF>;
  case hetcclMin: return kernel16<Min<float>, ToF, FromF>;
  case hetcclMax: return kernel16<Max<float>, ToF, FromF>;
  default: return nullptr;
  }
}

} // namespace

ReduceFn reduceFn(hetcclDataType_t t, hetcclRedOp_t op) {
  switch (t) {
  case hetcclFloat32: return floatFn<float>(op);
  case hetcclFloat64: return floatFn<double>(op);
  case hetcclFloat16: return halfFn<halfToFloat, floatToHalf>(op);
  case hetcclBfloat16: return halfFn<bf16ToFloat, floatToBf16>(op);
  case hetcclInt8: return intFn<int8_t, uint8_t>(op);
  case hetcclUint8: return intFn<uint8_t, uint8_t>(op);
  case hetcclInt32: return intFn<int32_t, uint32_t>(op);
  case hetcclInt64: return intFn<int64_t, uint64_t>(op);
  default: return nullptr;
  }
}

void reduce3(void* out, const void* a, const void* b, size_t n, hetcclDataType_t t, hetcclRedOp_t op) {
  if (out != a) memmove(out, a, n * dtypeSize(t));
  reduceFn(t, op)(out, b, n);
}

namespace {
template <typename T> void divInt(void* buf, size_t n, int d) {
  T* p = static_cast<T*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = T(p[i] / T(d));
}
template <typename T> void divFloat(void* buf, size_t n, int d) {
  T* p = static_cast<T*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = p[i] / T(d);
}
template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)> void div16(void* buf, size_t n, int d) {
  uint16_t* p = static_cast<uint16_t*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = FromF(ToF(p[i]) / float(d));
}
} // namespace

void finalizeAvg(void* buf, size_t n, hetcclDataType_t t, int nranks) {
  if (nranks <= 1) return;
  switch (t) {
  case hetcclFloat32: divFloat<float>(buf, n, nranks); break;
  case hetcclFloat64: divFloat<double>(buf, n, nranks); break;
  case hetcclFloat16: div16<halfToFloat, floatToHalf>(buf, n, nranks); break;
  case hetcclBfloat16: div16<bf16ToFloat, floatToBf16>(buf, n, nranks); break;
  case hetcclInt8: divInt<int8_t>(buf, n, nranks); break;
  case hetcclUint8: divInt<uint8_t>(buf, n, nranks); break;
  case hetcclInt32: divInt<int32_t>(buf, n, nranks); break;
  case hetcclInt64: divInt<int64_t>(buf, n, nranks); break;
  default: break;
  }
}

} // namespace hetccl
