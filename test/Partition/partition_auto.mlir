// RUN: het-opt --het-partition="plan=auto cluster=%het_src_root/examples/clusters/mixed-node.json" %S/Inputs/mlp_step.mlir | FileCheck %s
// RUN: het-opt --het-partition="plan=auto cluster=%het_src_root/examples/clusters/mixed-node.json" %het_src_root/examples/models/gpt.mlir | FileCheck %s --check-prefix=GPT

// plan=auto runs the planner on the IR's own layer costs: whatever it picks,
// the result is a verified set of stages on the spec's groups that covers
// every layer.

// CHECK: het.cluster @mixed_node
// CHECK: het.stage @s0 on @mixed_node::@{{a100|mi250x}} replicas {{[0-9]+}} samples {{[0-9]+}} layers [0,
// CHECK: layers [{{[0-9]+}}, 3)
// CHECK-NOT: func.func

// GPT: het.stage @s0 on @mixed_node::@{{a100|mi250x}} replicas {{[0-9]+}} samples {{[0-9]+}} layers [0,
// GPT: het.embedding
// GPT: layers [{{[0-9]+}}, 4)
// GPT: het.cross_entropy
