// Inputs with exactly known results: small integers (sums <= 40, products
// of 1s and 2s) are exact in every type including bf16, so every algorithm
// and every reduction order must give the same bits.
#pragma once

#include "het-c/hetccl.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace hetccltest {

size_t typeSize(hetcclDataType_t t);
// Stores integer v in element i of a buffer of type t (integers wrap).
void put(hetcclDataType_t t, void* buf, size_t i, int64_t v);
// Stores the average sum/n as the library defines it (one rounding).
void putAvg(hetcclDataType_t t, void* buf, size_t i, int64_t sum, int n);

inline int64_t genReduce(hetcclRedOp_t op, int r, size_t i) {
  if (op == hetcclProd) return (r + i) % 3 == 0 ? 2 : 1;
  return int64_t((r * 7 + i * 3) % 5) + 1;
}
inline int64_t genData(int r, size_t i) { return int64_t((r * 31 + i) % 100); }

// Expected reduction over ranks 0..n-1 of genReduce(op, r, i).
void expectReduce(hetcclDataType_t t, hetcclRedOp_t op, int n, void* buf, size_t i);

} // namespace hetccltest
