//===- HetDialectTest.cpp - C++ API of the het dialect --------------------===//
//
// What passes rely on when they build het IR from C++: result types inferred
// from operands, group sizes resolved through symbols, and the stage builder.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::het;

namespace {

class HetDialectTest : public ::testing::Test {
protected:
  HetDialectTest() {
    context.loadDialect<HetDialect, func::FuncDialect>();
  }

  /// A function with arguments of the given types, and a builder inside it.
  func::FuncOp makeFunction(TypeRange inputs) {
    OpBuilder builder(&context);
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
    auto func = builder.create<func::FuncOp>(
        builder.getUnknownLoc(), "f", builder.getFunctionType(inputs, {}));
    func.addEntryBlock();
    return func;
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, Float32Type::get(&context));
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(HetDialectTest, MatmulInfersBatchedShape) {
  auto func = makeFunction({tensor({2, 4, 16, 32}), tensor({2, 4, 16, 32})});
  OpBuilder b = OpBuilder::atBlockEnd(&func.getBody().front());
  auto args = func.getArguments();
  auto op = b.create<MatmulOp>(b.getUnknownLoc(), args[0], args[1],
                               /*transpose_lhs=*/false, /*transpose_rhs=*/true);
  EXPECT_EQ(op.getType(), tensor({2, 4, 16, 16}));
}

TEST_F(HetDialectTest, Conv2dInfersStridedPaddedShape) {
  auto func = makeFunction({tensor({8, 3, 32, 32}), tensor({16, 3, 5, 5})});
  OpBuilder b = OpBuilder::atBlockEnd(&func.getBody().front());
  auto args = func.getArguments();
  auto op = b.create<Conv2dOp>(b.getUnknownLoc(), args[0], args[1], Value(),
                               b.getDenseI64ArrayAttr({2, 2}),
                               b.getDenseI64ArrayAttr({2, 2}),
                               b.getDenseI64ArrayAttr({1, 1}),
                               b.getI64IntegerAttr(1));
  // (32 + 4 - 5) / 2 + 1 = 16
  EXPECT_EQ(op.getType(), tensor({8, 16, 16, 16}));
}

TEST_F(HetDialectTest, BroadcastInference) {
  SmallVector<Type> types;
  ASSERT_TRUE(succeeded(inferBroadcastType(std::nullopt, tensor({4, 1, 8}),
                                           tensor({3, 1}), types)));
  EXPECT_EQ(types.front(), tensor({4, 3, 8}));
  types.clear();
  EXPECT_TRUE(failed(inferBroadcastType(std::nullopt, tensor({4, 3}),
                                        tensor({4}), types)));
}

TEST_F(HetDialectTest, LayerNormStatisticsDropLastDimension) {
  auto func = makeFunction({tensor({4, 16, 64}), tensor({64})});
  OpBuilder b = OpBuilder::atBlockEnd(&func.getBody().front());
  auto args = func.getArguments();
  auto op = b.create<LayerNormOp>(b.getUnknownLoc(), args[0], args[1], args[1],
                                  b.getF64FloatAttr(1e-5));
  EXPECT_EQ(op.getOutput().getType(), tensor({4, 16, 64}));
  EXPECT_EQ(op.getSavedMean().getType(), tensor({4, 16}));
}

TEST_F(HetDialectTest, RMSNormStatisticsDropLastDimension) {
  auto func = makeFunction({tensor({4, 16, 64}), tensor({64})});
  OpBuilder b = OpBuilder::atBlockEnd(&func.getBody().front());
  auto args = func.getArguments();
  auto op = b.create<RMSNormOp>(b.getUnknownLoc(), args[0], args[1], b.getF64FloatAttr(1e-6));
  EXPECT_EQ(op.getOutput().getType(), tensor({4, 16, 64}));
  EXPECT_EQ(op.getSavedRstd().getType(), tensor({4, 16}));
  auto grad = b.create<RMSNormGradOp>(b.getUnknownLoc(), op.getOutput(), args[0], args[1],
                                      op.getSavedRstd());
  EXPECT_EQ(grad.getGradInput().getType(), tensor({4, 16, 64}));
  EXPECT_EQ(grad.getGradScale().getType(), tensor({64}));
}

TEST_F(HetDialectTest, GroupSizeResolvesStagesAndDeviceGroups) {
  const char *source = R"mlir(
    het.cluster @lab {
      het.device_group @gpu kind #het.device<nvidia, "sm_80"> count 8 memory_gib 80.0
    }
    het.stage @s0 on @lab::@gpu replicas 4 layers [0, 1) (%x: tensor<8xf32>) {
      %0 = het.all_reduce %x over @s0 sum : tensor<8xf32> -> tensor<8xf32>
      %1 = het.all_reduce %x over @lab::@gpu sum : tensor<8xf32> -> tensor<8xf32>
    }
  )mlir";
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(parsed);
  SymbolTableCollection symbols;
  SmallVector<int64_t> sizes;
  parsed->walk([&](CollectiveOpInterface op) {
    FailureOr<int64_t> size = op.getGroupSize(symbols);
    ASSERT_TRUE(succeeded(size));
    sizes.push_back(*size);
  });
  EXPECT_EQ(sizes, (SmallVector<int64_t>{4, 8}));
}

TEST_F(HetDialectTest, StageBuilderMakesAVerifiableStage) {
  OpBuilder b(&context);
  module = ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  auto cluster = b.create<ClusterOp>(b.getUnknownLoc(), "lab");
  cluster.getBody().push_back(new Block());
  OpBuilder inCluster = OpBuilder::atBlockEnd(&cluster.getBodyBlock());
  inCluster.create<DeviceGroupOp>(
      b.getUnknownLoc(), inCluster.getStringAttr("cpu"),
      DeviceKindAttr::get(&context, DeviceVendor::CPU, "x86_64"),
      /*count=*/inCluster.getI64IntegerAttr(2),
      /*memory_gib=*/inCluster.getF64FloatAttr(16.0),
      /*nodes=*/inCluster.getI64IntegerAttr(1));
  auto group = SymbolRefAttr::get(b.getStringAttr("lab"),
                                  {FlatSymbolRefAttr::get(b.getStringAttr("cpu"))});
  auto stage = b.create<StageOp>(b.getUnknownLoc(), "s0",
                                 ArrayRef<ReplicaGroupAttr>{ReplicaGroupAttr::get(
                                     b.getContext(), group, /*replicas=*/2, /*samples=*/0)},
                                 /*layerBegin=*/0, /*layerEnd=*/3, /*tensorParallel=*/1,
                                 TypeRange{tensor({4})});
  EXPECT_EQ(stage.getBodyBlock().getNumArguments(), 1u);
  EXPECT_TRUE(stage.getYield());
  EXPECT_TRUE(succeeded(verify(*module)));
}

} // namespace
