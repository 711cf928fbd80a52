//===- Kernels.h - het-tune kernels ---------------------------------*- C++ -*-===//
//
// The `kernels` command, built with the compiler (lib/Tune/Kernels).
//
//===----------------------------------------------------------------------===//

#ifndef HET_TOOLS_HET_TUNE_KERNELS_H
#define HET_TOOLS_HET_TUNE_KERNELS_H

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

struct KernelsCommand {
  CLI::App *command = nullptr;
  std::string model, db;
  std::vector<int> threads{1};
  int rounds = 5;
  double timeBudget = 300;
};

void addKernelsCommand(CLI::App &app, KernelsCommand &kernels);
int runKernels(const KernelsCommand &kernels, int waitMs);

#endif
