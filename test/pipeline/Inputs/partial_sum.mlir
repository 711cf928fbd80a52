// A model whose stage boundary carries a value that is not split by sample:
// layer 0 computes %t = %a x %b from parameters alone, and layer 1 uses it
// as the weight of its product. A stage of several replicas after the
// boundary sends back its part of %t's gradient (its samples' share), and
// the stage before adds the parts up: a partial sum between stages
// (test/pipeline/partial_sums.test).
func.func @partial(%x: tensor<8x16xf32>, %labels: tensor<8xi64>,
                   %w0: tensor<16x16xf32> {het.param}, %b0: tensor<16xf32> {het.param},
                   %a: tensor<10x6xf32> {het.param}, %b: tensor<6x16xf32> {het.param},
                   %c: tensor<10xf32> {het.param})
    -> tensor<f32> {
  %h = het.linear %x, %w0, %b0 {het.layer = 0 : i64}
      : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %r = het.relu %h {het.layer = 0 : i64} : tensor<8x16xf32>
  %t = het.matmul %a, %b {het.layer = 0 : i64}
      : tensor<10x6xf32>, tensor<6x16xf32> -> tensor<10x16xf32>
  %logits = het.linear %r, %t, %c {het.layer = 1 : i64}
      : tensor<8x16xf32>, tensor<10x16xf32>, tensor<10xf32> -> tensor<8x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 1 : i64}
      : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
