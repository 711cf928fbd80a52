// Attention in three shapes het.attention must get right (het-fuse-attention
// forms all three): causal with more keys than queries (70 queries, 90
// keys: each query sees 20 more keys than its index; the two query blocks
// of 64 and 6 rows stop at different keys), causal with fewer keys than
// queries (90 queries, 70 keys: the first 20 queries see no key and get
// zero rows), the key given transposed by het.transpose, and non-causal
// attention whose values are narrower than its keys (E = 4, D = 8). The
// loss weights every output element by random data, so every output
// gradient differs.
func.func @attn(%x: tensor<2x70x16xf32>, %m: tensor<2x90x16xf32>,
                %ra: tensor<2x2x70x8xf32>, %rb: tensor<2x2x90x8xf32>, %rc: tensor<2x2x70x4xf32>,
                %wq: tensor<16x16xf32> {het.param}, %wk: tensor<16x16xf32> {het.param},
                %wv: tensor<16x16xf32> {het.param}, %wq2: tensor<16x16xf32> {het.param},
                %wk2: tensor<16x16xf32> {het.param}, %wv2: tensor<16x16xf32> {het.param},
                %wq3: tensor<16x16xf32> {het.param}, %wk3: tensor<16x16xf32> {het.param},
                %wv3: tensor<8x16xf32> {het.param}) -> tensor<f32> {
  // A: causal, Q = 70 < K = 90.
  %qa = het.linear %x, %wq : tensor<2x70x16xf32>, tensor<16x16xf32> -> tensor<2x70x16xf32>
  %qahs = het.reshape %qa : tensor<2x70x16xf32> -> tensor<2x70x2x8xf32>
  %qah = het.transpose %qahs {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x70x2x8xf32> -> tensor<2x2x70x8xf32>
  %ka = het.linear %m, %wk : tensor<2x90x16xf32>, tensor<16x16xf32> -> tensor<2x90x16xf32>
  %kahs = het.reshape %ka : tensor<2x90x16xf32> -> tensor<2x90x2x8xf32>
  %kah = het.transpose %kahs {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x90x2x8xf32> -> tensor<2x2x90x8xf32>
  %va = het.linear %m, %wv : tensor<2x90x16xf32>, tensor<16x16xf32> -> tensor<2x90x16xf32>
  %vahs = het.reshape %va : tensor<2x90x16xf32> -> tensor<2x90x2x8xf32>
  %vah = het.transpose %vahs {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x90x2x8xf32> -> tensor<2x2x90x8xf32>
  %sa = het.matmul %qah, %kah {transpose_rhs} : tensor<2x2x70x8xf32>, tensor<2x2x90x8xf32> -> tensor<2x2x70x90xf32>
  %pa = het.softmax %sa {causal, scale = 0.35355339059327373 : f64} : tensor<2x2x70x90xf32>
  %oa = het.matmul %pa, %vah : tensor<2x2x70x90xf32>, tensor<2x2x90x8xf32> -> tensor<2x2x70x8xf32>
  // B: causal, Q = 90 > K = 70, the key transposed by het.transpose.
  %qb = het.linear %m, %wq2 : tensor<2x90x16xf32>, tensor<16x16xf32> -> tensor<2x90x16xf32>
  %qbhs = het.reshape %qb : tensor<2x90x16xf32> -> tensor<2x90x2x8xf32>
  %qbh = het.transpose %qbhs {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x90x2x8xf32> -> tensor<2x2x90x8xf32>
  %kb = het.linear %x, %wk2 : tensor<2x70x16xf32>, tensor<16x16xf32> -> tensor<2x70x16xf32>
  %kbhs = het.reshape %kb : tensor<2x70x16xf32> -> tensor<2x70x2x8xf32>
  %kbh = het.transpose %kbhs {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x70x2x8xf32> -> tensor<2x2x70x8xf32>
  %vb = het.linear %x, %wv2 : tensor<2x70x16xf32>, tensor<16x16xf32> -> tensor<2x70x16xf32>
  %vbhs = het.reshape %vb : tensor<2x70x16xf32> -> tensor<2x70x2x8xf32>
  %vbh = het.transpose %vbhs {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x70x2x8xf32> -> tensor<2x2x70x8xf32>
  %kbt = het.transpose %kbh {permutation = array<i64: 0, 1, 3, 2>} : tensor<2x2x70x8xf32> -> tensor<2x2x8x70xf32>
  %sb = het.matmul %qbh, %kbt : tensor<2x2x90x8xf32>, tensor<2x2x8x70xf32> -> tensor<2x2x90x70xf32>
  %pb = het.softmax %sb {causal, scale = 0.5 : f64} : tensor<2x2x90x70xf32>
  %ob = het.matmul %pb, %vbh : tensor<2x2x90x70xf32>, tensor<2x2x70x8xf32> -> tensor<2x2x90x8xf32>
  // C: not causal, E = 4 < D = 8.
  %qc = het.linear %x, %wq3 : tensor<2x70x16xf32>, tensor<16x16xf32> -> tensor<2x70x16xf32>
  %qchs = het.reshape %qc : tensor<2x70x16xf32> -> tensor<2x70x2x8xf32>
  %qch = het.transpose %qchs {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x70x2x8xf32> -> tensor<2x2x70x8xf32>
  %kc = het.linear %x, %wk3 : tensor<2x70x16xf32>, tensor<16x16xf32> -> tensor<2x70x16xf32>
  %kchs = het.reshape %kc : tensor<2x70x16xf32> -> tensor<2x70x2x8xf32>
  %kch = het.transpose %kchs {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x70x2x8xf32> -> tensor<2x2x70x8xf32>
  %vc = het.linear %x, %wv3 : tensor<2x70x16xf32>, tensor<8x16xf32> -> tensor<2x70x8xf32>
  %vcs = het.reshape %vc : tensor<2x70x8xf32> -> tensor<2x70x2x4xf32>
  %vch = het.transpose %vcs {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x70x2x4xf32> -> tensor<2x2x70x4xf32>
  %sc = het.matmul %qch, %kch {transpose_rhs} : tensor<2x2x70x8xf32>, tensor<2x2x70x8xf32> -> tensor<2x2x70x70xf32>
  %pc = het.softmax %sc : tensor<2x2x70x70xf32>
  %oc = het.matmul %pc, %vch : tensor<2x2x70x70xf32>, tensor<2x2x70x4xf32> -> tensor<2x2x70x4xf32>
  // loss = sum(oa ra) + sum(ob rb) + sum(oc rc)
  %wa = het.mul %oa, %ra : tensor<2x2x70x8xf32>, tensor<2x2x70x8xf32> -> tensor<2x2x70x8xf32>
  %la = het.reduce_sum %wa {axes = array<i64: 0, 1, 2, 3>} : tensor<2x2x70x8xf32> -> tensor<f32>
  %wb = het.mul %ob, %rb : tensor<2x2x90x8xf32>, tensor<2x2x90x8xf32> -> tensor<2x2x90x8xf32>
  %lb = het.reduce_sum %wb {axes = array<i64: 0, 1, 2, 3>} : tensor<2x2x90x8xf32> -> tensor<f32>
  %wc = het.mul %oc, %rc : tensor<2x2x70x4xf32>, tensor<2x2x70x4xf32> -> tensor<2x2x70x4xf32>
  %lc = het.reduce_sum %wc {axes = array<i64: 0, 1, 2, 3>} : tensor<2x2x70x4xf32> -> tensor<f32>
  %lab = het.add %la, %lb : tensor<f32>, tensor<f32> -> tensor<f32>
  %loss = het.add %lab, %lc : tensor<f32>, tensor<f32> -> tensor<f32>
  return %loss : tensor<f32>
}
