// RUN: not het-opt --het-partition="plan=%S/Inputs/missing.plan.json" %S/Inputs/mlp_step.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: het-partition: {{.*}}missing.plan.json: cannot open the plan file

// RUN: not het-opt --het-partition="plan=auto" %S/Inputs/mlp_step.mlir 2>&1 | FileCheck %s --check-prefix=AUTO
// AUTO: error: het-partition: plan=auto needs cluster=<spec.json>

// RUN: not het-opt --het-partition="plan=%S/Inputs/short.plan.json" %S/Inputs/mlp_step.mlir 2>&1 | FileCheck %s --check-prefix=SHORT
// SHORT: error: het-partition: the plan covers layers [0, 2) but the function has 3 layers

// RUN: not het-opt --het-partition="plan=%S/Inputs/bad_group.plan.json" %S/Inputs/mlp_step.mlir 2>&1 | FileCheck %s --check-prefix=GROUP
// GROUP: error: het-partition: {{.*}}bad_group.plan.json: stages[1].group: unknown group 'h100' (the groups are: a100)

// RUN: not het-opt --het-partition="plan=auto cluster=%het_src_root/test/plan/Inputs/clusters/unknown_kind.json" %S/Inputs/mlp_step.mlir 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: error: het-partition: {{.*}}unknown_kind.json: nodes[0].devices[0].kind: unknown device kind 'B200-imaginary'

// RUN: not het-opt --het-partition="plan=%S/Inputs/two_stages.plan.json" %het_src_root/examples/partitioned/mlp_two_stages.mlir 2>&1 | FileCheck %s --check-prefix=NOFUNC
// NOFUNC: error: het-partition: no function with het.layer ops
