// RUN: het-opt %s -canonicalize -split-input-file | FileCheck %s

// A cast to the same format is nothing; a cast of an exact (widening) cast
// reads the original value.
// CHECK-LABEL: func @round_trips
// CHECK-NEXT: %[[LOW:.*]] = het.cast %arg0 : tensor<4xf32> -> tensor<4xbf16>
// CHECK-NEXT: %[[UP:.*]] = het.cast %[[LOW]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK-NEXT: return %[[UP]], %[[LOW]], %arg0
func.func @round_trips(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>) {
  %same = het.cast %x : tensor<4xf32> -> tensor<4xf32>
  %low = het.cast %same : tensor<4xf32> -> tensor<4xbf16>
  %up = het.cast %low : tensor<4xbf16> -> tensor<4xf32>
  // bf16 -> f32 -> bf16 is the bf16 value itself.
  %again = het.cast %up : tensor<4xf32> -> tensor<4xbf16>
  return %up, %again, %same : tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>
}

// -----

// A rounding cast in between is kept: f32 -> bf16 -> f32 is not f32.
// CHECK-LABEL: func @lossy
// CHECK: het.cast %arg0 : tensor<4xf32> -> tensor<4xbf16>
// CHECK: het.cast %{{.*}} : tensor<4xbf16> -> tensor<4xf32>
func.func @lossy(%x: tensor<4xf32>) -> tensor<4xf32> {
  %low = het.cast %x : tensor<4xf32> -> tensor<4xbf16>
  %up = het.cast %low : tensor<4xbf16> -> tensor<4xf32>
  return %up : tensor<4xf32>
}

// -----

// f16 -> f32 is exact, so f16 -> f32 -> bf16 is one cast f16 -> bf16; but
// f16 -> bf16 -> f32 is not (neither 16-bit format holds the other).
// CHECK-LABEL: func @halves
// CHECK-NEXT: %[[B:.*]] = het.cast %arg0 : tensor<4xf16> -> tensor<4xbf16>
// CHECK-NEXT: %[[F:.*]] = het.cast %[[B]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK-NEXT: return %[[B]], %[[F]]
func.func @halves(%h: tensor<4xf16>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %wide = het.cast %h : tensor<4xf16> -> tensor<4xf32>
  %b = het.cast %wide : tensor<4xf32> -> tensor<4xbf16>
  %f = het.cast %b : tensor<4xbf16> -> tensor<4xf32>
  return %b, %f : tensor<4xbf16>, tensor<4xf32>
}
