// RUN: het-opt %s | het-opt | FileCheck %s

// Unknown sizes (`?`) propagate through the shape rules; only known sizes
// are compared.
// CHECK-LABEL: func @dynamic_batch
func.func @dynamic_batch(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>, %y: tensor<?xi64>,
                         %img: tensor<?x3x?x?xf32>, %k: tensor<8x3x3x3xf32>) -> tensor<f32> {
  // CHECK: het.linear {{.*}} -> tensor<?x128xf32>
  %h = het.linear %x, %w, %b : tensor<?x64xf32>, tensor<128x64xf32>, tensor<128xf32> -> tensor<?x128xf32>
  // CHECK: het.matmul {{.*}} -> tensor<?x64xf32>
  %m = het.matmul %h, %w : tensor<?x128xf32>, tensor<128x64xf32> -> tensor<?x64xf32>
  // CHECK: het.conv2d {{.*}} -> tensor<?x8x?x?xf32>
  %c = het.conv2d %img, %k : tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32> -> tensor<?x8x?x?xf32>
  // CHECK: het.layer_norm {{.*}} -> tensor<?x128xf32>, tensor<?xf32>, tensor<?xf32>
  %n, %mu, %r = het.layer_norm %h, %b, %b : tensor<?x128xf32>, tensor<128xf32>, tensor<128xf32> -> tensor<?x128xf32>, tensor<?xf32>, tensor<?xf32>
  // CHECK: het.cross_entropy {{.*}} : tensor<?x128xf32>, tensor<?xi64> -> tensor<f32>
  %l = het.cross_entropy %n, %y : tensor<?x128xf32>, tensor<?xi64> -> tensor<f32>
  return %l : tensor<f32>
}
