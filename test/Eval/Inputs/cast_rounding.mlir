// Values at the edges of bf16 and f16 rounding (cast_rounding.test).
func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c = arith.constant dense<[1.00390625, 1.01171875, 70000.0, 0.1]> : tensor<4xf32>
  %b = het.cast %c : tensor<4xf32> -> tensor<4xbf16>
  %u = het.cast %b : tensor<4xbf16> -> tensor<4xf32>
  %h = het.cast %c : tensor<4xf32> -> tensor<4xf16>
  %v = het.cast %h : tensor<4xf16> -> tensor<4xf32>
  return %u, %v : tensor<4xf32>, tensor<4xf32>
}
