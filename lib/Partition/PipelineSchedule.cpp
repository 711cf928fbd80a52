//===- PipelineSchedule.cpp - order of micro-batches per pipeline stage ----===//
//
// The schedule is data on the stages rather than code: the runtime walks
// the list and runs the stage's forward or backward function for the named
// micro-batch. Keeping it in the IR makes it visible (and testable) before
// any code is generated, and lets other schedules be added here alone.
//
//===----------------------------------------------------------------------===//
#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Partition/Passes.h"
#include "het/Partition/PipelineSchedule.h"

#include "mlir/IR/Builders.h"

namespace mlir::het {
#define GEN_PASS_DEF_HETPIPELINESCHEDULE
#include "het/Partition/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;

namespace het::partition {
std::vector<std::string> pipelineOrder(PipelineSchedule schedule, int64_t stage, int64_t stages,
                                       int64_t microBatches) {
  std::vector<std::string> order;
  auto forward = [&](int64_t i) { order.push_back("F" + std::to_string(i)); };
  auto backward = [&](int64_t i) { order.push_back("B" + std::to_string(i)); };
  if (schedule == PipelineSchedule::GPipe) {
    for (int64_t i = 0; i < microBatches; ++i)
      forward(i);
    for (int64_t i = 0; i < microBatches; ++i)
      backward(i);
    return order;
  }
  // 1F1B: the last stage never waits, stage j keeps S-1-j forwards ahead.
  int64_t warmup = std::min(stages - 1 - stage, microBatches);
  for (int64_t i = 0; i < warmup; ++i)
    forward(i);
  for (int64_t i = 0; i < microBatches - warmup; ++i) {
    forward(warmup + i);
    backward(i);
  }
  for (int64_t i = microBatches - warmup; i < microBatches; ++i)
    backward(i);
  return order;
}
} // namespace het::partition

namespace {

struct HetPipelineSchedulePass
    : public mlir::het::impl::HetPipelineScheduleBase<HetPipelineSchedulePass> {
  using HetPipelineScheduleBase::HetPipelineScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    ::het::partition::PipelineSchedule kind;
    if (schedule == "1f1b")
      kind = ::het::partition::PipelineSchedule::OneForwardOneBackward;
    else if (schedule == "gpipe")
      kind = ::het::partition::PipelineSchedule::GPipe;
    else {
      module.emitError() << "het-pipeline-schedule: unknown schedule '" << schedule
                         << "' (use 1f1b or gpipe)";
      return signalPassFailure();
    }
    if (microBatches < 1) {
      module.emitError() << "het-pipeline-schedule: micro-batches must be at least 1, got "
                         << microBatches;
      return signalPassFailure();
    }
    SmallVector<StageOp> stages(module.getOps<StageOp>());
    if (stages.empty()) {
      module.emitError("het-pipeline-schedule: the module has no het.stage (run het-partition "
                       "first)");
      return signalPassFailure();
    }
    Builder b(&getContext());
    for (auto [j, stage] : llvm::enumerate(stages)) {
      SmallVector<Attribute> order;
      for (const std::string &entry :
           ::het::partition::pipelineOrder(kind, j, stages.size(), microBatches))
        order.push_back(b.getStringAttr(entry));
      stage->setAttr(HetDialect::getMicroBatchesAttrName(), b.getI64IntegerAttr(microBatches));
      stage->setAttr(HetDialect::getScheduleAttrName(), b.getArrayAttr(order));
    }
  }
};

} // namespace
