// RUN: het-opt %s -split-input-file -verify-diagnostics

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
// expected-error @+1 {{replica group @lab::@gpu needs at least one replica, got 0}}
het.stage @s0 on @lab::@gpu replicas 0 layers [0, 1) {
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
// expected-error @+1 {{'het.stage' op layer range [3, 3) must be non-empty and start at >= 0}}
het.stage @s0 on @lab::@gpu replicas 1 layers [3, 3) {
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
het.stage @s0 on @lab::@gpu replicas 1 layers [0, 2) (%x: tensor<4xf32>) {
  // expected-error @+1 {{'het.relu' op belongs to layer 2, outside the layer range [0, 2) of stage @s0}}
  %0 = het.relu %x {het.layer = 2 : i64} : tensor<4xf32>
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
// expected-error @+1 {{'het.stage' op is placed on @lab::@cpu, which is not a het.device_group (expected @cluster::@group)}}
het.stage @s0 on @lab::@cpu replicas 1 layers [0, 2) {
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
// expected-error @+1 {{'het.stage' op has 8 replicas on device group @lab::@gpu, which has only 4 devices}}
het.stage @s0 on @lab::@gpu replicas 8 layers [0, 2) {
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
het.stage @s0 on @lab::@gpu replicas 1 layers [0, 1) (%x: tensor<4xf32>) {
  // expected-error @+1 {{'het.send' op names its own stage @s0; send/recv connect two different stages}}
  het.send %x to @s0 : tensor<4xf32>
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
het.stage @s0 on @lab::@gpu replicas 1 layers [0, 1) {
  // expected-error @+1 {{'het.recv' op names @nowhere, which is not a het.stage}}
  %0 = het.recv from @nowhere : tensor<4xf32>
}

// -----

func.func @outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{'het.send' op must be inside a het.stage}}
  het.send %x to @s1 : tensor<4xf32>
  return
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
het.stage @s0 on @lab::@gpu replicas 1 layers [0, 1) {
  // expected-error @+1 {{'het.recv' op 'channel' must be >= 0, got -1}}
  %0 = het.recv from @s1 {channel = -1 : i64} : tensor<4xf32>
}
het.stage @s1 on @lab::@gpu replicas 1 layers [1, 2) {
}

// -----

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
het.stage @s0 on @lab::@gpu replicas 1 layers [0, 1) (%x: tensor<4xf32>) {
  // expected-error @+2 {{'het.yield' op expects parent op to be one of 'het.stage, het.elementwise'}}
  %0 = scf.execute_region -> tensor<4xf32> {
    het.yield %x : tensor<4xf32>
  }
}

// -----

// Replicas on several groups: all shares or none.
het.cluster @lab {
  het.device_group @a kind #het.device<cpu, "onednn"> count 2 memory_gib 4.0
  het.device_group @b kind #het.device<cpu, "mlir"> count 2 memory_gib 4.0
}
// expected-error @+1 {{'het.stage' op gives a share of the micro-batch ('samples') to some replica groups but not to others; give all or none}}
het.stage @s0 on @lab::@a replicas 1 samples 48, @lab::@b replicas 1 layers [0, 1) {
}

// -----

// The stages' shares describe one micro-batch.
het.cluster @lab {
  het.device_group @a kind #het.device<cpu, "onednn"> count 2 memory_gib 4.0
  het.device_group @b kind #het.device<cpu, "mlir"> count 2 memory_gib 4.0
}
het.stage @s0 on @lab::@a replicas 1 samples 48, @lab::@b replicas 1 samples 16 layers [0, 1) {
}
// expected-error @+1 {{'het.stage' op shares add up to 60 samples per micro-batch, but those of stage @s0 add up to 64}}
het.stage @s1 on @lab::@a replicas 1 samples 60 layers [1, 2) {
}

// -----

// No group gives out more devices than it has, over all stages.
het.cluster @lab {
  het.device_group @a kind #het.device<cpu, "onednn"> count 2 memory_gib 4.0
}
het.stage @s0 on @lab::@a replicas 2 layers [0, 1) {
}
// expected-error @+1 {{'het.stage' op and the stages before it use 3 devices of @lab::@a, which has only 2}}
het.stage @s1 on @lab::@a replicas 1 layers [1, 2) {
}

// -----

// Tensor parallelism stays inside a node.
het.cluster @lab {
  het.device_group @a kind #het.device<nvidia, "sm_90"> count 8 memory_gib 80.0 {nodes = 4 : i64}
}
// expected-error @+1 {{'het.stage' op splits each replica over 4 devices, which does not divide the 2 devices per node of @lab::@a (tensor parallelism stays inside a node)}}
het.stage @s0 on @lab::@a replicas 2 layers [0, 1) tensor_parallel 4 {
}

// -----

het.cluster @lab {
  het.device_group @a kind #het.device<cpu, "onednn"> count 4 memory_gib 4.0
}
// expected-error @+1 {{'het.stage' op 'tensor_parallel' must be >= 1, got 0}}
het.stage @s0 on @lab::@a replicas 2 layers [0, 1) tensor_parallel 0 {
}

// -----

// A tensor-parallel collective inside a stage is among the devices of one
// replica: the group must be as large as the stage's split.
het.cluster @lab {
  het.device_group @a kind #het.device<cpu, "onednn"> count 4 memory_gib 4.0
}
het.tensor_parallel_group @tp4 size 4
het.stage @s0 on @lab::@a replicas 2 layers [0, 1) tensor_parallel 2 (%x: tensor<4xf32>) {
  // expected-error @+1 {{'het.all_reduce' op is over tensor-parallel group @tp4 of 4 devices, but stage @s0 splits each replica over 2}}
  %0 = het.all_reduce %x over @tp4 sum : tensor<4xf32> -> tensor<4xf32>
}

// -----

// expected-error @+1 {{'het.tensor_parallel_group' op 'size' must be >= 1, got 0}}
het.tensor_parallel_group @tp size 0

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'het.tensor_parallel_copy' op is over @nowhere, which is not a het.tensor_parallel_group}}
  %0 = het.tensor_parallel_copy %x over @nowhere : tensor<4xf32>
  return %0 : tensor<4xf32>
}
