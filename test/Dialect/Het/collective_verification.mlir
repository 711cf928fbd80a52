// RUN: het-opt %s -split-input-file -verify-diagnostics

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
het.stage @s on @lab::@gpu replicas 4 layers [0, 1) (%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.all_reduce' op is over @t, which is neither a het.stage, a het.device_group, a het.tensor_parallel_group, a het.tied_group nor a het.cluster}}
  %0 = het.all_reduce %x over @t sum : tensor<8xf32> -> tensor<8xf32>
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.all_reduce' op result type 'tensor<4xf32>' must equal the input type 'tensor<8xf32>'}}
  %0 = het.all_reduce %x over @s sum : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<8xi32>) {
  // expected-error @+1 {{'het.all_reduce' op compression 'int8' needs a floating-point tensor, got 'i32'}}
  %0 = het.all_reduce %x over @s sum compression int8 : tensor<8xi32> -> tensor<8xi32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.all_reduce' op compression 'topk' is only defined for sum and avg reductions, got 'max'}}
  %0 = het.all_reduce %x over @s max compression topk(0.1) : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.all_gather' op compression 'topk' needs a reduction (all_reduce or reduce_scatter)}}
  %0 = het.all_gather %x over @s axis 0 compression topk(0.1) : tensor<8xf32> -> tensor<32xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.all_reduce' op compression 'topk' needs a ratio: topk(0.01)}}
  %0 = "het.all_reduce"(%x) <{group = @s, reduction = #het.reduction<sum>, compression = #het.compression<topk>}> : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.all_reduce' op has a top-k ratio but compression is 'none'}}
  %0 = "het.all_reduce"(%x) <{group = @s, reduction = #het.reduction<sum>, topk_ratio = 0.5 : f64}> : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.all_reduce' op top-k ratio must be in (0, 1], got 1.5}}
  %0 = het.all_reduce %x over @s sum compression topk(1.5) : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.all_gather' op result element type 'f16' differs from the input's 'f32'}}
  %0 = het.all_gather %x over @s axis 0 : tensor<8xf32> -> tensor<32xf16>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.all_gather' op result rank 2 differs from the input rank 1}}
  %0 = het.all_gather %x over @s axis 0 : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.reduce_scatter' op 'axis' 1 is out of range for rank 1}}
  %0 = het.reduce_scatter %x over @s sum axis 1 : tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 3 memory_gib 80.0
}
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.reduce_scatter' op scatters dimension 0 of size 8, which does not divide by the 3 members of @lab::@gpu}}
  %0 = het.reduce_scatter %x over @lab::@gpu sum axis 0 : tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
func.func @f(%x: tensor<8x3xf32>) {
  // expected-error @+1 {{'het.reduce_scatter' op result dimension 0 must be 8 / 4 = 2, got 4}}
  %0 = het.reduce_scatter %x over @lab::@gpu sum axis 0 : tensor<8x3xf32> -> tensor<4x3xf32>
  return
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
func.func @f(%x: tensor<8x3xf32>) {
  // expected-error @+1 {{'het.reduce_scatter' op result dimension 1 must equal the input's (3), got 2}}
  %0 = het.reduce_scatter %x over @lab::@gpu sum axis 0 : tensor<8x3xf32> -> tensor<2x2xf32>
  return
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
func.func @f(%x: tensor<8x3xf32>) {
  // expected-error @+1 {{'het.all_gather' op result dimension 1 must be 12 (input size times group size), got 3}}
  %0 = het.all_gather %x over @lab::@gpu axis 1 : tensor<8x3xf32> -> tensor<8x3xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.broadcast' op 'root' must be >= 0, got -1}}
  %0 = het.broadcast %x over @s root -1 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.broadcast' op root 4 is not a member of @lab::@gpu, which has 4 members}}
  %0 = het.broadcast %x over @lab::@gpu root 4 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.broadcast' op result type 'tensor<4xf32>' must equal the input type 'tensor<8xf32>'}}
  %0 = het.broadcast %x over @s root 0 : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 3 memory_gib 80.0
}
func.func @f(%x: tensor<8x3xf32>) {
  // expected-error @+1 {{'het.all_to_all' op splits dimension 0 of size 8, which does not divide by the 3 members of @lab::@gpu}}
  %0 = het.all_to_all %x over @lab::@gpu split 0 concat 1 : tensor<8x3xf32> -> tensor<2x9xf32>
  return
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 2 memory_gib 80.0
}
func.func @f(%x: tensor<8x3xf32>) {
  // expected-error @+1 {{'het.all_to_all' op result dimension 1 must be 6, got 3}}
  %0 = het.all_to_all %x over @lab::@gpu split 0 concat 1 : tensor<8x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3xf32>) {
  // expected-error @+1 {{'het.all_to_all' op 'concat_axis' 2 is out of range for rank 2}}
  %0 = het.all_to_all %x over @s split 0 concat 2 : tensor<8x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{unknown collective algorithm 'butterfly'; expected auto, ring, tree, halving_doubling, hierarchical or ps}}
  %0 = het.all_reduce %x over @s sum algorithm butterfly : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{unknown compression 'zstd'; expected none, fp16, bf16, int8 or topk(RATIO)}}
  %0 = het.all_reduce %x over @s sum compression zstd : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{unknown reduction 'mean'; expected sum, prod, min, max or avg}}
  %0 = het.all_reduce %x over @s mean : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

// A tied group's all-reduce spans every rank of its stages.
het.cluster @lab {
  het.device_group @cpu kind #het.device<cpu, "onednn"> count 3 memory_gib 8.0
}
het.tied_group @tied_a_b stages [@a, @b]
het.stage @a on @lab::@cpu replicas 2 layers [0, 1) (%x: tensor<8xf32>) {
  %0 = het.all_reduce %x over @tied_a_b sum : tensor<8xf32> -> tensor<8xf32>
}
het.stage @b on @lab::@cpu replicas 1 layers [1, 2) (%x: tensor<8xf32>) {
  %0 = het.all_reduce %x over @tied_a_b sum : tensor<8xf32> -> tensor<8xf32>
}

// -----

// expected-error @+1 {{'het.tied_group' op ties at least two stages, got 1}}
het.tied_group @alone stages [@a]
