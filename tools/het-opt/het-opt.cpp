//===- het-opt.cpp - run het and MLIR passes on .mlir files ---------------===//
//
// Registers only what het programs contain: the het dialect, the upstream
// dialects het IR is built from or lowered to, and the passes that apply.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"
#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/Transforms/Passes.h"
#include "het/Partition/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::het::HetDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect,
                  mlir::linalg::LinalgDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect>();
  mlir::het::registerCodegenDialects(registry); // and the CPU lowering's

  mlir::registerTransformsPasses(); // canonicalize, cse, inline, ...
  mlir::het::registerHetPasses();
  mlir::het::registerHetTrainingPipeline();
  mlir::het::registerHetPartitionPasses();
  mlir::het::registerHetConversionPasses();

  llvm::cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) {
    os << "het " << HET_VERSION << " (built on MLIR " << HET_MLIR_VERSION
       << ")\n";
  });
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "het optimizer driver: het and MLIR passes on .mlir files\n",
      registry));
}
