// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{changes the format, not the shape: input 'tensor<4x8xf32>', result 'tensor<8x4xbf16>'}}
  %0 = het.cast %x : tensor<4x8xf32> -> tensor<8x4xbf16>
  return
}

// -----

func.func @integers(%x: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = het.cast %x : tensor<4xi64> -> tensor<4xf32>
  return
}
