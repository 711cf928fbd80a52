// RUN: het-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'het.cluster' op must contain at least one het.device_group}}
het.cluster @empty {
}

// -----

het.cluster @lab {
  het.device_group @a kind #het.device<nvidia, "sm_80"> count 8 memory_gib 80.0
  // expected-error @+1 {{'func.func' op cannot appear in a het.cluster, which holds only het.device_group and het.link}}
  func.func private @f()
}

// -----

het.cluster @lab {
  het.device_group @a kind #het.device<nvidia, "sm_80"> count 8 memory_gib 80.0
  het.device_group @b kind #het.device<amd, "gfx90a"> count 8 memory_gib 64.0
  het.link @a, @b bandwidth_gbps 100.0 latency_us 1.0
  // expected-error @+1 {{'het.link' op duplicates the link between @a and @b (links are bidirectional)}}
  het.link @b, @a bandwidth_gbps 100.0 latency_us 1.0
}

// -----

het.cluster @lab {
  // expected-error @+1 {{'het.device_group' op 'count' must be >= 1, got -2}}
  het.device_group @a kind #het.device<nvidia, "sm_80"> count -2 memory_gib 80.0
}

// -----

het.cluster @lab {
  // expected-error @+1 {{'het.device_group' op 'memory_gib' must be positive, got 0}}
  het.device_group @a kind #het.device<nvidia, "sm_80"> count 2 memory_gib 0.0
}

// -----

het.cluster @lab {
  // expected-error @+1 {{'het.device_group' op 'nodes' must be >= 1, got 0}}
  het.device_group @a kind #het.device<nvidia, "sm_80"> count 2 memory_gib 8.0 {nodes = 0 : i64}
}

// -----

het.cluster @lab {
  // expected-error @+1 {{'het.device_group' op 'count' (6) must divide evenly over 'nodes' (4)}}
  het.device_group @a kind #het.device<nvidia, "sm_80"> count 6 memory_gib 8.0 {nodes = 4 : i64}
}

// -----

het.cluster @lab {
  het.device_group @a kind #het.device<nvidia, "sm_80"> count 8 memory_gib 80.0
  // expected-error @+1 {{'het.link' op 'bandwidth_gbps' must be positive, got -5}}
  het.link @a, @a bandwidth_gbps -5.0 latency_us 1.0
}

// -----

het.cluster @lab {
  het.device_group @a kind #het.device<nvidia, "sm_80"> count 8 memory_gib 80.0
  // expected-error @+1 {{'het.link' op 'latency_us' must be non-negative, got -1}}
  het.link @a, @a bandwidth_gbps 5.0 latency_us -1.0
}

// -----

het.cluster @lab {
  het.device_group @a kind #het.device<nvidia, "sm_80"> count 8 memory_gib 80.0
  // expected-error @+1 {{'het.link' op names @b, which is not a het.device_group of cluster @lab}}
  het.link @a, @b bandwidth_gbps 5.0 latency_us 1.0
}

// -----

// expected-error @+1 {{'het.device_group' op expects parent op 'het.cluster'}}
het.device_group @a kind #het.device<nvidia, "sm_80"> count 8 memory_gib 80.0

// -----

het.cluster @lab {
  // expected-error @+1 {{device kind 'amd' needs a non-empty architecture name}}
  het.device_group @a kind #het.device<amd, ""> count 8 memory_gib 80.0
}

// -----

het.cluster @lab {
  // expected-error @+2 {{failed to parse Het_DeviceKindAttr parameter 'vendor'}}
  // expected-error @+1 {{expected ::mlir::het::DeviceVendor to be one of: cpu, nvidia, amd, ascend, iluvatar, metax, moore_threads}}
  het.device_group @a kind #het.device<intel, "xe"> count 8 memory_gib 80.0
}
