// examples/models/cnn.mlir with BatchNorm running statistics, as PyTorch
// keeps them and het.from_torch imports them: blocks 0 and 2 update their
// running mean and variance (het.state arguments, returned under the same
// names), block 2 also counts its batches (num_batches_tracked).
func.func @cnn(%x: tensor<8x3x32x32xf32>, %labels: tensor<8xi64>,
               %k1: tensor<16x3x3x3xf32> {het.param}, %g1: tensor<16xf32> {het.param}, %c1: tensor<16xf32> {het.param},
               %k2: tensor<32x16x3x3xf32> {het.param}, %g2: tensor<32xf32> {het.param}, %c2: tensor<32xf32> {het.param},
               %k3: tensor<32x32x3x3xf32> {het.param}, %g3: tensor<32xf32> {het.param}, %c3: tensor<32xf32> {het.param},
               %w: tensor<10x32xf32> {het.param}, %b: tensor<10xf32> {het.param},
               %rm1: tensor<16xf32> {het.state, het.name = "bn1.running_mean"},
               %rv1: tensor<16xf32> {het.state, het.name = "bn1.running_var"},
               %rm3: tensor<32xf32> {het.state, het.name = "bn3.running_mean"},
               %rv3: tensor<32xf32> {het.state, het.name = "bn3.running_var"},
               %count3: tensor<i64> {het.state, het.name = "bn3.num_batches_tracked"})
    -> (tensor<f32>, tensor<16xf32> {het.name = "bn1.running_mean"},
        tensor<16xf32> {het.name = "bn1.running_var"},
        tensor<32xf32> {het.name = "bn3.running_mean"},
        tensor<32xf32> {het.name = "bn3.running_var"},
        tensor<i64> {het.name = "bn3.num_batches_tracked"}) {
  // Block 0: 3 -> 16 channels, 32x32.
  %y1 = het.conv2d %x, %k1 {padding = array<i64: 1, 1>, het.layer = 0 : i64}
      : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<8x16x32x32xf32>
  %n1, %m1, %s1 = het.batch_norm %y1, %g1, %c1 {het.layer = 0 : i64}
      : tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>
     -> tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>
  %r1 = het.relu %n1 {het.layer = 0 : i64} : tensor<8x16x32x32xf32>
  %rm1n, %rv1n = het.batch_norm_running_stats %rm1, %rv1, %m1, %s1, %y1 {het.layer = 0 : i64}
      : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8x16x32x32xf32>
     -> tensor<16xf32>, tensor<16xf32>

  // Block 1: 16 -> 32 channels, then 2x2 max pooling to 16x16.
  %y2 = het.conv2d %r1, %k2 {padding = array<i64: 1, 1>, het.layer = 1 : i64}
      : tensor<8x16x32x32xf32>, tensor<32x16x3x3xf32> -> tensor<8x32x32x32xf32>
  %n2, %m2, %s2 = het.batch_norm %y2, %g2, %c2 {het.layer = 1 : i64}
      : tensor<8x32x32x32xf32>, tensor<32xf32>, tensor<32xf32>
     -> tensor<8x32x32x32xf32>, tensor<32xf32>, tensor<32xf32>
  %r2 = het.relu %n2 {het.layer = 1 : i64} : tensor<8x32x32x32xf32>
  %p2 = het.max_pool2d %r2 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, het.layer = 1 : i64}
      : tensor<8x32x32x32xf32> -> tensor<8x32x16x16xf32>

  // Block 2: 32 -> 32 channels at 16x16.
  %y3 = het.conv2d %p2, %k3 {padding = array<i64: 1, 1>, het.layer = 2 : i64}
      : tensor<8x32x16x16xf32>, tensor<32x32x3x3xf32> -> tensor<8x32x16x16xf32>
  %n3, %m3, %s3 = het.batch_norm %y3, %g3, %c3 {het.layer = 2 : i64}
      : tensor<8x32x16x16xf32>, tensor<32xf32>, tensor<32xf32>
     -> tensor<8x32x16x16xf32>, tensor<32xf32>, tensor<32xf32>
  %r3 = het.relu %n3 {het.layer = 2 : i64} : tensor<8x32x16x16xf32>
  %rm3n, %rv3n = het.batch_norm_running_stats %rm3, %rv3, %m3, %s3, %y3
      {momentum = 3.000000e-01 : f64, het.layer = 2 : i64}
      : tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<8x32x16x16xf32>
     -> tensor<32xf32>, tensor<32xf32>
  %one = arith.constant dense<1> : tensor<i64>
  %count3n = arith.addi %count3, %one {het.layer = 2 : i64} : tensor<i64>

  // Head: global average pooling, linear classifier, loss.
  %gap = het.avg_pool2d %r3 {kernel = array<i64: 16, 16>, strides = array<i64: 16, 16>, het.layer = 3 : i64}
      : tensor<8x32x16x16xf32> -> tensor<8x32x1x1xf32>
  %flat = het.reshape %gap {het.layer = 3 : i64} : tensor<8x32x1x1xf32> -> tensor<8x32xf32>
  %logits = het.linear %flat, %w, %b {het.layer = 3 : i64}
      : tensor<8x32xf32>, tensor<10x32xf32>, tensor<10xf32> -> tensor<8x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 3 : i64}
      : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  return %loss, %rm1n, %rv1n, %rm3n, %rv3n, %count3n
      : tensor<f32>, tensor<16xf32>, tensor<16xf32>, tensor<32xf32>, tensor<32xf32>, tensor<i64>
}
