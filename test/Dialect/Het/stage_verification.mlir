// RUN: het-opt %s -split-input-file -verify-diagnostics

het.cluster @lab {
  het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}
// expected-error @+1 {{'het.stage' op 'replicas' must be >= 1, got 0}}
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
// expected-error @+1 {{'het.stage' op has 8 replicas but device group @lab::@gpu has only 4 devices}}
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
