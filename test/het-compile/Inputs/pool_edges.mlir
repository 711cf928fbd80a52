// Pooling edge cases for the generated kernels: overlapping 3x3 windows
// with stride 2 and padding 1 on an odd-sized image (padded windows, uneven
// counts for the average), ties after ReLU (the first maximum wins).
func.func @pools(%x: tensor<4x3x11x11xf32>, %labels: tensor<4xi64>,
                 %k: tensor<4x3x3x3xf32> {het.param}, %g: tensor<4xf32> {het.param},
                 %c: tensor<4xf32> {het.param},
                 %w: tensor<5x36xf32> {het.param}, %b: tensor<5xf32> {het.param}) -> tensor<f32> {
  %y = het.conv2d %x, %k {padding = array<i64: 1, 1>, het.layer = 0 : i64}
      : tensor<4x3x11x11xf32>, tensor<4x3x3x3xf32> -> tensor<4x4x11x11xf32>
  %n, %m, %s = het.batch_norm %y, %g, %c {het.layer = 0 : i64}
      : tensor<4x4x11x11xf32>, tensor<4xf32>, tensor<4xf32>
     -> tensor<4x4x11x11xf32>, tensor<4xf32>, tensor<4xf32>
  %r = het.relu %n {het.layer = 0 : i64} : tensor<4x4x11x11xf32>
  %p = het.max_pool2d %r {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                          padding = array<i64: 1, 1>, het.layer = 0 : i64}
      : tensor<4x4x11x11xf32> -> tensor<4x4x6x6xf32>
  %a = het.avg_pool2d %p {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                          padding = array<i64: 1, 1>, het.layer = 1 : i64}
      : tensor<4x4x6x6xf32> -> tensor<4x4x3x3xf32>
  %flat = het.reshape %a {het.layer = 1 : i64} : tensor<4x4x3x3xf32> -> tensor<4x36xf32>
  %logits = het.linear %flat, %w, %b {het.layer = 1 : i64}
      : tensor<4x36xf32>, tensor<5x36xf32>, tensor<5xf32> -> tensor<4x5xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 1 : i64}
      : tensor<4x5xf32>, tensor<4xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
