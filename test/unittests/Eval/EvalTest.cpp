//===- EvalTest.cpp - the evaluator's C++ API ------------------------------===//
//
// .npy round trips and header errors in memory, and evaluate() on a function
// built with the C++ builders (the path other tools take, without files).
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Eval/Evaluator.h"
#include "het/Eval/Npy.h"

#include "Eval/Philox.h" // lib/ is on this test's include path

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <gtest/gtest.h>

using namespace mlir;
using ::het::eval::ElementKind;
using ::het::eval::HostArray;

namespace {

HostArray floats(std::vector<int64_t> shape, std::vector<double> values,
                 ElementKind kind = ElementKind::F32) {
  HostArray array;
  array.kind = kind;
  array.shape = std::move(shape);
  array.floats.assign(values.begin(), values.end());
  return array;
}

TEST(Npy, RoundTripsEveryKind) {
  HostArray f32 = floats({2, 3}, {0.5, -1.25, 3, 4, 5, 6});
  HostArray f64 = floats({3}, {1e-300, 2.5, -7}, ElementKind::F64);
  HostArray i64;
  i64.kind = ElementKind::I64;
  i64.shape = {};
  i64.integers = {-42};
  for (const HostArray &array : {f32, f64, i64}) {
    auto back = ::het::eval::parseNpy(::het::eval::serializeNpy(array), "memory");
    ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
    EXPECT_EQ(back->kind, array.kind);
    EXPECT_EQ(back->shape, array.shape);
    EXPECT_EQ(back->floats, array.floats);
    EXPECT_EQ(back->integers, array.integers);
  }
}

TEST(Npy, HeaderIsPaddedTo64Bytes) {
  std::string bytes = ::het::eval::serializeNpy(floats({1}, {1}));
  EXPECT_EQ((bytes.size() - 4) % 64, 0u); // header ends on a 64-byte boundary
}

TEST(Npy, ErrorsNameTheSourceAndTheProblem) {
  auto notNpy = ::het::eval::parseNpy("hello world", "a.npy");
  ASSERT_FALSE(static_cast<bool>(notNpy));
  EXPECT_EQ(llvm::toString(notNpy.takeError()), "a.npy: not a .npy file (bad magic)");

  std::string truncated = ::het::eval::serializeNpy(floats({4}, {1, 2, 3, 4}));
  truncated.resize(truncated.size() - 3);
  auto short_ = ::het::eval::parseNpy(truncated, "b.npy");
  ASSERT_FALSE(static_cast<bool>(short_));
  EXPECT_NE(llvm::toString(short_.takeError()).find("b.npy: data holds 13 bytes but shape [4]"),
            std::string::npos);
}

TEST(Evaluate, RunsABuiltFunctionInBothPrecisions) {
  MLIRContext context;
  context.loadDialect<mlir::het::HetDialect, func::FuncDialect>();
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module.getBody());
  auto type = RankedTensorType::get({4}, b.getF32Type());
  auto function = b.create<func::FuncOp>(loc, "f", b.getFunctionType({type, type}, {type}));
  b.setInsertionPointToStart(function.addEntryBlock());
  Value sum = b.create<mlir::het::AddOp>(loc, function.getArgument(0), function.getArgument(1));
  Value relu = b.create<mlir::het::ReluOp>(loc, sum);
  b.create<func::ReturnOp>(loc, relu);

  std::vector<HostArray> args = {floats({4}, {1, -2, 0.1, 3}), floats({4}, {0.5, 1, 0.2, -4})};
  for (auto precision : {::het::eval::Precision::F32, ::het::eval::Precision::F64}) {
    auto results = ::het::eval::evaluate(function, args, precision);
    ASSERT_TRUE(succeeded(results));
    ASSERT_EQ(results->size(), 1u);
    const HostArray &out = results->front();
    EXPECT_EQ(out.shape, (std::vector<int64_t>{4}));
    EXPECT_DOUBLE_EQ(static_cast<double>(out.floats[0]), 1.5);
    EXPECT_DOUBLE_EQ(static_cast<double>(out.floats[1]), 0.0);
    EXPECT_NEAR(static_cast<double>(out.floats[2]), 0.3, 1e-7);
    EXPECT_DOUBLE_EQ(static_cast<double>(out.floats[3]), 0.0);
  }
  module->erase();
}

} // namespace

// The known-answer vectors of Random123 (kat_vectors, philox4x32_10): the
// evaluator, libhetrt and any GPU lowering must draw exactly these words.
TEST(Philox, MatchesRandom123KnownAnswers) {
  using ::het::eval::philox4x32;
  using Words = ::het::eval::PhiloxWords;
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (Words{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                       {0xffffffffu, 0xffffffffu}),
            (Words{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                       {0xa4093822u, 0x299f31d0u}),
            (Words{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, DropoutUniformsAreInTheUnitIntervalAndDifferPerStream) {
  double sum = 0;
  int differ = 0;
  for (int64_t index = 0; index < 4096; ++index) {
    double u = ::het::eval::dropoutUniform(7, 0, 3, index);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    differ += u != ::het::eval::dropoutUniform(7, 1, 3, index);
  }
  EXPECT_NEAR(sum / 4096, 0.5, 0.02);
  EXPECT_GT(differ, 4000);
}
