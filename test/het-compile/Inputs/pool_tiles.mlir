// Pooling whose windows tile the input exactly -- 2x2 max pooling with
// stride 2 on an even plane, then a global average pool -- so the
// generated gradients scatter into the windows instead of gathering. With
// integer-valued inputs (het-compile's --load) most 2x2 windows hold ties:
// the first maximum (row-major) must get the gradient.
func.func @tiles(%x: tensor<2x3x6x6xf32>, %labels: tensor<2xi64>,
                 %img: tensor<2x3x6x6xf32> {het.param}, %w: tensor<4x3xf32> {het.param})
    -> tensor<f32> {
  %z = het.add %x, %img {het.layer = 0 : i64} : tensor<2x3x6x6xf32>, tensor<2x3x6x6xf32> -> tensor<2x3x6x6xf32>
  %p = het.max_pool2d %z {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, het.layer = 0 : i64}
      : tensor<2x3x6x6xf32> -> tensor<2x3x3x3xf32>
  %g = het.avg_pool2d %p {kernel = array<i64: 3, 3>, strides = array<i64: 3, 3>, het.layer = 0 : i64}
      : tensor<2x3x3x3xf32> -> tensor<2x3x1x1xf32>
  %flat = het.reshape %g {het.layer = 0 : i64} : tensor<2x3x1x1xf32> -> tensor<2x3xf32>
  %logits = het.linear %flat, %w {het.layer = 0 : i64}
      : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<2x4xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 0 : i64}
      : tensor<2x4xf32>, tensor<2xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
