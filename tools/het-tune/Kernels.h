//===- Kernels.h - het-tune kernels ---------------------------------*- C++ -*-===//
//
// The `kernels` command, built with the compiler (lib/Tune/Kernels): GEMM
// engines of dense layers (--library dnnl) or tilings of generated
// contractions (--library mlir).
//
//===----------------------------------------------------------------------===//

#ifndef HET_TOOLS_HET_TUNE_KERNELS_H
#define HET_TOOLS_HET_TUNE_KERNELS_H

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

struct KernelsCommand {
  CLI::App *command = nullptr;
  std::string model, db;
  std::string library = "dnnl";
  std::vector<int64_t> batches; // --library mlir: rebatched steps
  std::string precision = "fp32"; // --library mlir: fp32, or bf16 (dot-product contractions)
  std::vector<int> threads{1};
  int rounds = 0; // 0: the library's default (5 for dnnl, 3 for mlir)
  double timeBudget = 300;
};

void addKernelsCommand(CLI::App &app, KernelsCommand &kernels);
int runKernels(const KernelsCommand &kernels, int waitMs);

#endif
