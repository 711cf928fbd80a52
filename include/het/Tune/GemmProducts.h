//===- GemmProducts.h - the matrix products of a step's dense layers -*- C++ -*-===//
//
// What het-tune kernels measures and het-compile --tuning-db chooses an
// engine for: each dense layer's matrix products, as the runtime computes
// them (lib/Runtime/DnnlKernels.cpp, GemmEngines.h):
//
//   het.linear       bit 0   y  = x w^T     [rows, out] = [rows, in] [out, in]^T
//   het.linear_grad  bit 0   dx = dy w      [rows, in]  = [rows, out] [out, in]
//                    bit 1   dw = dy^T x    [out, in]   = [rows, out]^T [rows, in]
//
// A product's key is its shape and transposes ("sgemm m=.. n=.. k=.. a=N
// b=T"), never the layer it belongs to: two layers of one shape share a
// record. The choice is an attribute on the op (kGemmEnginesAttr, a bit
// per product, set = OpenBLAS) that the lowering writes into the call.
//
//===----------------------------------------------------------------------===//

#ifndef HET_TUNE_GEMMPRODUCTS_H
#define HET_TUNE_GEMMPRODUCTS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace het::tune {

constexpr const char *kGemmEnginesAttr = "het.gemm_engines";

struct GemmProduct {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  unsigned bit = 0;          // its bit in kGemmEnginesAttr
  bool openBlasAllowed = true; // false where oneDNN fuses an activation into it
  /// "sgemm m=1024 n=256 k=1024 a=T b=N"
  std::string key() const;
};

/// The products `op` computes (none for ops without dense products; dx of
/// a first layer, whose input gradient is unused, is left out).
std::vector<GemmProduct> gemmProducts(mlir::Operation *op);

/// The distinct products of every dense layer in `module`, in first-seen order.
std::vector<GemmProduct> distinctGemmProducts(mlir::ModuleOp module);

/// The engine bits the lowering writes into the op's call (0: all oneDNN).
inline int64_t gemmEngineBits(mlir::Operation *op) {
  auto bits = op->getAttrOfType<mlir::IntegerAttr>(kGemmEnginesAttr);
  return bits ? bits.getInt() : 0;
}

} // namespace het::tune

#endif
