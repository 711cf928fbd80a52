// RUN: het-opt %het_src_root/examples/models/mlp.mlir --het-training-pipeline="optimizer=sgd" | het-opt --het-partition="plan=%S/Inputs/mlp-3.plan.json" --het-pipeline-schedule="micro-batches=4" | FileCheck %s --check-prefix=ONE
// RUN: het-opt %het_src_root/examples/models/mlp.mlir --het-training-pipeline="optimizer=sgd" | het-opt --het-partition="plan=%S/Inputs/mlp-3.plan.json" --het-pipeline-schedule="schedule=gpipe micro-batches=3" | FileCheck %s --check-prefix=GPIPE
// RUN: het-opt %het_src_root/examples/models/mlp.mlir --het-training-pipeline="optimizer=sgd" | het-opt --het-partition="plan=%S/Inputs/mlp-3.plan.json" --het-pipeline-schedule="micro-batches=1" | FileCheck %s --check-prefix=SINGLE
// RUN: het-opt %het_src_root/examples/models/mlp.mlir --het-training-pipeline="optimizer=sgd" | not het-opt --het-partition="plan=%S/Inputs/mlp-3.plan.json" --het-pipeline-schedule="schedule=zigzag" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not het-opt %s --het-pipeline-schedule 2>&1 | FileCheck %s --check-prefix=NOSTAGE

// 1F1B over three stages: stage j runs 2-j warm-up forwards, then one
// forward and one backward in turn, then the remaining backwards.
// ONE: het.stage @s0 {{.*}}het.micro_batches = 4 : i64, {{.*}}het.schedule = ["F0", "F1", "F2", "B0", "F3", "B1", "B2", "B3"]
// ONE: het.stage @s1 {{.*}}het.schedule = ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3"]
// ONE: het.stage @s2 {{.*}}het.schedule = ["F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3"]

// GPipe: every forward, then every backward, on every stage.
// GPIPE-COUNT-3: het.schedule = ["F0", "F1", "F2", "B0", "B1", "B2"]

// SINGLE-COUNT-3: het.schedule = ["F0", "B0"]

// BAD: error: het-pipeline-schedule: unknown schedule 'zigzag' (use 1f1b or gpipe)
// NOSTAGE: error: het-pipeline-schedule: the module has no het.stage (run het-partition first)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
