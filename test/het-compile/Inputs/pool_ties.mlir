// Ties inside max-pooling windows decide where the gradient goes: the
// first maximum of a window (row-major) gets it. With integer-valued
// inputs (het-compile's --load) most windows hold ties, and a build that
// picked another maximum would train the image differently.
func.func @ties(%x: tensor<2x3x6x6xf32>, %labels: tensor<2xi64>,
                %img: tensor<2x3x6x6xf32> {het.param}, %w: tensor<4x27xf32> {het.param})
    -> tensor<f32> {
  %z = het.add %x, %img {het.layer = 0 : i64} : tensor<2x3x6x6xf32>, tensor<2x3x6x6xf32> -> tensor<2x3x6x6xf32>
  %p = het.max_pool2d %z {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                          padding = array<i64: 1, 1>, het.layer = 0 : i64}
      : tensor<2x3x6x6xf32> -> tensor<2x3x3x3xf32>
  %flat = het.reshape %p {het.layer = 0 : i64} : tensor<2x3x3x3xf32> -> tensor<2x27xf32>
  %logits = het.linear %flat, %w {het.layer = 0 : i64}
      : tensor<2x27xf32>, tensor<4x27xf32> -> tensor<2x4xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 0 : i64}
      : tensor<2x4xf32>, tensor<2xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
