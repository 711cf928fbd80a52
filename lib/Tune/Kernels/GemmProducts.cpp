//===- GemmProducts.cpp - the matrix products of a step's dense layers ----===//

#include "het/Tune/GemmProducts.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace mlir;
using namespace mlir::het;

namespace het::tune {

std::string GemmProduct::key() const {
  return llvm::formatv("sgemm m={0} n={1} k={2} a={3} b={4}", m, n, k, transA ? "T" : "N",
                       transB ? "T" : "N")
      .str();
}

namespace {
/// Rows of a [..., features] tensor: every dimension but the last.
int64_t rowsOf(Value value) {
  auto shape = cast<RankedTensorType>(value.getType()).getShape();
  int64_t rows = 1;
  for (int64_t d : shape.drop_back())
    rows *= d;
  return rows;
}
int64_t lastOf(Value value) { return cast<RankedTensorType>(value.getType()).getShape().back(); }
bool staticShapes(Operation *op) {
  for (Type type : op->getOperandTypes())
    if (auto tensor = dyn_cast<RankedTensorType>(type); !tensor || !tensor.hasStaticShape())
      return false;
  return true;
}
} // namespace

std::vector<GemmProduct> gemmProducts(Operation *op) {
  std::vector<GemmProduct> products;
  if (!staticShapes(op))
    return products;
  if (auto linear = dyn_cast<LinearOp>(op)) {
    GemmProduct y{rowsOf(linear.getInput()), lastOf(linear.getResult()),
                  lastOf(linear.getInput()), false, true, 0};
    y.openBlasAllowed = linear.getActivation() == Activation::None;
    products.push_back(y);
  } else if (auto grad = dyn_cast<LinearGradOp>(op)) {
    int64_t rows = rowsOf(grad.getInput()), in = lastOf(grad.getInput()),
            out = lastOf(grad.getGradOutput());
    if (!grad.getGradInput().use_empty())
      products.push_back({rows, in, out, false, false, 0});
    products.push_back({out, in, rows, true, false, 1});
  }
  return products;
}

std::vector<GemmProduct> distinctGemmProducts(ModuleOp module) {
  std::vector<GemmProduct> products;
  std::set<std::string> seen;
  module.walk([&](Operation *op) {
    for (const GemmProduct &product : gemmProducts(op))
      if (seen.insert(product.key()).second)
        products.push_back(product);
  });
  return products;
}

} // namespace het::tune
