// RUN: het-opt %s | het-opt | FileCheck %s

// CHECK-LABEL: het.cluster @lab {
// CHECK-NEXT: het.device_group @a100 kind #het.device<nvidia, "sm_80"> count 8 memory_gib 8.000000e+01
// CHECK-NEXT: het.device_group @mi250 kind #het.device<amd, "gfx90a"> count 16 memory_gib 6.400000e+01 {nodes = 2 : i64}
// CHECK-NEXT: het.device_group @npu kind #het.device<ascend, "ascend910b"> count 8 memory_gib 6.400000e+01
// CHECK-NEXT: het.device_group @cpu kind #het.device<cpu, "x86_64"> count 2 memory_gib 2.400000e+01
// CHECK-NEXT: het.link @a100, @a100 bandwidth_gbps 4.800000e+03 latency_us 2.000000e+00
// CHECK-NEXT: het.link @a100, @mi250 bandwidth_gbps 2.000000e+02 latency_us 5.000000e+00
het.cluster @lab {
  het.device_group @a100 kind #het.device<nvidia, "sm_80"> count 8 memory_gib 80.0
  het.device_group @mi250 kind #het.device<amd, "gfx90a"> count 16 memory_gib 64.0 {nodes = 2 : i64}
  het.device_group @npu kind #het.device<ascend, "ascend910b"> count 8 memory_gib 64.0
  het.device_group @cpu kind #het.device<cpu, "x86_64"> count 2 memory_gib 24.0 {nodes = 1 : i64}
  het.link @a100, @a100 bandwidth_gbps 4800.0 latency_us 2.0
  het.link @a100, @mi250 bandwidth_gbps 200.0 latency_us 5.0
  het.link @npu, @cpu bandwidth_gbps 100.0 latency_us 10.0
}

// The six vendors of the device-kind attribute.
// CHECK-LABEL: het.cluster @vendors
het.cluster @vendors {
  // CHECK: #het.device<iluvatar, "bi-v150">
  het.device_group @g1 kind #het.device<iluvatar, "bi-v150"> count 8 memory_gib 64.0
  // CHECK: #het.device<metax, "c500">
  het.device_group @g2 kind #het.device<metax, "c500"> count 8 memory_gib 64.0
  // CHECK: #het.device<moore_threads, "mtt-s4000">
  het.device_group @g3 kind #het.device<moore_threads, "mtt-s4000"> count 8 memory_gib 48.0
}
