// RUN: het-opt %het_src_root/examples/models/mlp.mlir --het-training-pipeline --het-build-entry-points | FileCheck %s
// RUN: het-opt %het_src_root/examples/models/mlp.mlir --het-training-pipeline --het-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// The step is kept, the forward model becomes a predict function returning
// logits, and the runtime's calling convention is recorded: names, shapes,
// roles and the initializers het-eval --random-inputs uses.
// CHECK: module attributes {hetrt.model_info = "het-model 1\0Astep mlp_train_step 8 7
// CHECK-SAME: in arg0 f32 2 32 64 data normal
// CHECK-SAME: in arg1 i64 1 32 label randint 10
// CHECK-SAME: in arg2 f32 2 128 64 param uniform -1.25000000000000000e-01 1.25000000000000000e-01
// CHECK-SAME: in arg3 f32 1 128 param uniform -1.00000000000000006e-01 1.00000000000000006e-01
// CHECK-SAME: out loss f32 0
// CHECK-SAME: predict mlp_predict 8 1
// CHECK-SAME: out logits f32 2 32 10
// CHECK-SAME: hetrt.predict = @mlp_predict, hetrt.step = @mlp_train_step
// CHECK-NOT: func.func @mlp(
// CHECK-DAG: func.func @mlp_train_step(
// CHECK-DAG: func.func @mlp_predict({{.*}}) -> tensor<32x10xf32>

// After the whole lowering: the C entry points and main.
// LLVM-DAG: llvm.func @het_step(
// LLVM-DAG: llvm.func @het_predict(
// LLVM-DAG: llvm.func @main(
// LLVM-DAG: llvm.func @hetrt_main(
// LLVM-DAG: llvm.func @hetrt_learning_rate(f64) -> f64
// LLVM-NOT: het.
