// The ops PyTorch models need beyond the dense layers, in one step: a
// strided slice and a plain one, concatenation, the maximum reduction, and
// a het.elementwise body with every scalar op the importer emits (its
// gradient is a differentiated body).
func.func @layout(%x: tensor<4x6xf32>, %labels: tensor<4xi64>, %w: tensor<8x6xf32> {het.param},
                  %v: tensor<5x12xf32> {het.param}, %g: tensor<4xf32> {het.param}) -> tensor<f32> {
  %h = het.linear %x, %w : tensor<4x6xf32>, tensor<8x6xf32> -> tensor<4x8xf32>
  %a = het.slice %h {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 4>,
                     steps = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x4xf32>
  %b = het.slice %h {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 8>,
                     steps = array<i64: 2>} : tensor<4x8xf32> -> tensor<4x4xf32>
  %act = het.elementwise %b, %g : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32> {
  ^bb0(%e: f32, %s: f32):
    %one = arith.constant 1.0 : f32
    %half = arith.constant 0.5 : f32
    %three = arith.constant 3.0 : f32
    %n = arith.negf %e : f32
    %ex = math.exp %n : f32
    %den = arith.addf %one, %ex : f32
    %sig = arith.divf %e, %den : f32
    %t = math.tanh %s : f32
    %er = math.erf %e : f32
    %r = math.rsqrt %den : f32
    %sq = math.sqrt %den : f32
    %l = math.log %den : f32
    %ab = math.absf %e : f32
    %p = math.powf %ab, %three : f32
    %lo = arith.maximumf %e, %half : f32
    %hi = arith.minimumf %lo, %three : f32
    %gt = arith.cmpf ogt, %e, %s : f32
    %sel = arith.select %gt, %hi, %er : f32
    %s1 = arith.mulf %sig, %t : f32
    %s2 = arith.addf %s1, %r : f32
    %s3 = arith.addf %s2, %sq : f32
    %s4 = arith.subf %s3, %l : f32
    %s5 = arith.addf %s4, %p : f32
    %s6 = arith.addf %s5, %sel : f32
    het.yield %s6 : f32
  }
  %m = het.reduce_max %h {axes = array<i64: 1>, keep_dims} : tensor<4x8xf32> -> tensor<4x1xf32>
  %mm = het.broadcast_to %m : tensor<4x1xf32> -> tensor<4x4xf32>
  %c = het.concat %act, %a, %mm {axis = 1 : i64}
      : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x12xf32>
  %logits = het.linear %c, %v : tensor<4x12xf32>, tensor<5x12xf32> -> tensor<4x5xf32>
  %loss = het.cross_entropy %logits, %labels : tensor<4x5xf32>, tensor<4xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
