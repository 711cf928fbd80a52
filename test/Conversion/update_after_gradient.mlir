// RUN: het-opt %het_src_root/examples/models/mlp.mlir --het-training-pipeline="optimizer=adam" --het-update-after-gradient | FileCheck %s
// RUN: het-opt %het_src_root/examples/models/mlp.mlir --het-training-pipeline="optimizer=sgd" --het-update-after-gradient --het-outline-layers | FileCheck %s --check-prefix=OUTLINED

// Autodiff appends every update after the whole backward pass; here each
// one follows the op that computes its gradient, and the step counter's
// increment (inputs and constants only) moves up with the first update.
// CHECK-LABEL: func.func @mlp_train_step
// CHECK: %[[T:.*]] = arith.addi
// CHECK: het.linear {{.*}}het.layer = 0
// CHECK: het.cross_entropy_grad
// CHECK-NEXT: het.linear_grad {{.*}}het.layer = 2
// CHECK-NEXT: het.adam {{.*}}, %[[T]] {het.layer = 2
// CHECK-NEXT: het.adam {{.*}}, %[[T]] {het.layer = 2
// CHECK-NEXT: het.relu_grad
// CHECK-NEXT: het.linear_grad {{.*}}het.layer = 1
// CHECK-NEXT: het.adam {{.*}} {het.layer = 1
// CHECK-NEXT: het.adam {{.*}} {het.layer = 1
// CHECK-NEXT: het.relu_grad
// CHECK-NEXT: het.linear_grad {{.*}}het.layer = 0
// CHECK-NEXT: het.adam {{.*}} {het.layer = 0
// CHECK-NEXT: het.adam {{.*}} {het.layer = 0
// CHECK-NEXT: return

// A layer's backward and its updates are then one run: one call per layer
// on the way back (the last layer's forward, loss, backward and updates
// are one), none for the updates alone.
// OUTLINED-LABEL: func.func @mlp_train_step
// OUTLINED: call @het_outlined_{{.*}}het.layer = 0
// OUTLINED-NEXT: call @het_outlined_{{.*}}het.layer = 1
// OUTLINED-NEXT: call @het_outlined_{{.*}}het.layer = 2
// OUTLINED-NEXT: call @het_outlined_{{.*}}het.layer = 1
// OUTLINED-NEXT: call @het_outlined_{{.*}}het.layer = 0
// OUTLINED-NEXT: return
