// RUN: het-opt %s --pass-pipeline='builtin.module(func.func(het-autocast{precision=bf16}))' -split-input-file -verify-diagnostics
// RUN: not het-opt %s --pass-pipeline='builtin.module(func.func(het-autocast{precision=fp8}))' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: het-autocast: unknown precision 'fp8' (use bf16, fp16 or fp32)
// RUN: not het-opt %s --pass-pipeline='builtin.module(func.func(het-autocast{precision=fp32 layer-precisions=bf16,int8}))' 2>&1 | FileCheck %s --check-prefix=LAYER
// LAYER: het-autocast: unknown format 'int8' for layer 1 in layer-precisions (use fp32, bf16 or fp16)

func.func @step(%w: tensor<4xf32>, %g: tensor<4xf32>, %buf: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{het-autocast runs on the forward model, before het-autodiff; this is already a training step}}
  %n, %m = het.sgd %w, %g, %buf {lr = 0.1 : f64, momentum = 0.0 : f64} : tensor<4xf32>
  return %n : tensor<4xf32>
}
