//===- ShardOptimizer.cpp - ZeRO-1 over a stage's replicas ----------------===//
//
// Every replica of a data-parallel stage used to hold all of the stage's
// optimizer state and apply the same update to every parameter. Here each
// replica keeps a block of rows of the state and updates that block of the
// parameter; the all-gather joins the updated blocks. The all-reduce of the
// gradient becomes a reduce-scatter to the blocks: a ring all-reduce is a
// reduce-scatter and an all-gather, so the bytes on the wire stay the same
// while the state (Adam's two moments: 8 bytes per parameter) shrinks to
// the replica's block. Blocks follow batch shares (ShareBlocks.h), so the
// replicas of one share keep running one compiled variant.
//
//===----------------------------------------------------------------------===//


#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Partition/Passes.h"
#include "het/Support/ShareBlocks.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::het {
#define GEN_PASS_DEF_HETSHARDOPTIMIZER
#include "het/Partition/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;

namespace {

/// With loss scaling, a step whose gradients overflowed keeps the old
/// value: `het.select %inf, %old, %new`. The select that does so for
/// `updated` (its only user, returning `old` on overflow), or null.
SelectOp keepingSelect(Value updated, Value old) {
  if (!updated.hasOneUse())
    return nullptr;
  auto select = dyn_cast<SelectOp>(*updated.getUsers().begin());
  if (!select || select.getOnFalse() != updated || select.getOnTrue() != old)
    return nullptr;
  return select;
}

/// Whether `value` (an update's new value, or its select) only leaves the
/// stage.
bool onlyYielded(Value value) {
  return llvm::all_of(value.getUsers(), [](Operation *u) { return isa<YieldOp>(u); });
}

/// Where het-partition's gradient clipping feeds `grad` to an update: the
/// clipping, the gradient's index among its results, the stage's squared
/// norm (which the clipping's job-wide all-reduce adds) and the operand of
/// the norm that reads the same unclipped gradient; all null when `grad`
/// is not clipped so, or the unclipped gradient has other uses.
struct Clipping {
  ClipByNormOp clip;
  unsigned clipped = 0;
  SquaredNormOp norm;
  unsigned normOperand = 0;
};
Clipping clippingOf(Value grad) {
  auto clip = grad.getDefiningOp<ClipByNormOp>();
  if (!clip)
    return {};
  unsigned k = cast<OpResult>(grad).getResultNumber();
  auto total = clip.getSquaredNorm().getDefiningOp<AllReduceOp>();
  Value unclipped = clip.getGradients()[k];
  if (!total || std::distance(unclipped.use_begin(), unclipped.use_end()) != 2)
    return {};
  // The norm that reads it: the all-reduce's input, or one of the norms a
  // het.add joins there (under tensor parallelism, split gradients and
  // whole ones are weighted apart).
  for (OpOperand &use : unclipped.getUses()) {
    auto norm = dyn_cast<SquaredNormOp>(use.getOwner());
    if (!norm || norm->getBlock() != clip->getBlock())
      continue;
    for (Value v = norm.getResult(); v.hasOneUse();) {
      Operation *user = *v.getUsers().begin();
      if (user == total)
        return {clip, k, norm, use.getOperandNumber()};
      if (!isa<AddOp>(user))
        break;
      v = user->getResult(0);
    }
  }
  return {};
}

/// A squared norm some of whose operands (`blocks`) are now blocks of
/// rows that one of the stage's R replicas alone holds: those count R
/// times the norm's weight (1 where it is 1/R: every replica held them;
/// 1/T where tensor parallelism made it 1/(R T) for gradients each of T
/// devices holds whole) while the rest keep the norm's weight, so the
/// blocks move to a norm of their own and the two sums are added.
void splitNorm(SquaredNormOp norm, ArrayRef<unsigned> blocks, int64_t replicas) {
  SmallVector<Value> whole, held;
  for (auto [k, tensor] : llvm::enumerate(norm.getTensors()))
    (llvm::is_contained(blocks, unsigned(k)) ? held : whole).push_back(tensor);
  OpBuilder b(norm);
  Location loc = norm.getLoc();
  Type scalar = norm.getType();
  SmallVector<Operation *> created = {
      b.create<SquaredNormOp>(loc, scalar, held,
                              b.getF64FloatAttr(norm.getWeight().convertToDouble() *
                                                double(replicas)))};
  if (!whole.empty()) {
    created.push_back(b.create<SquaredNormOp>(loc, scalar, whole, norm.getWeightAttr()));
    created.push_back(
        b.create<AddOp>(loc, scalar, created[1]->getResult(0), created[0]->getResult(0)));
  }
  for (Operation *op : created)
    op->setDiscardableAttrs(norm->getDiscardableAttrDictionary());
  Value sum = created.back()->getResult(0);
  norm.replaceAllUsesWith(sum);
  norm.erase();
}

/// ZeRO-3: the forward and the backward each all-gather the parameter
/// held in blocks just before their first use of it, so the whole
/// parameter lives only while a pass reads it (the backward gathers again
/// rather than keep the forward's copy). `update` (the optimizer step) and
/// `keep` (its loss-scaling select, or null) take the block itself.
template <typename Mark>
void gatherBeforeUses(BlockArgument param, Operation *update, Operation *keep,
                      SymbolRefAttr group, RankedTensorType whole, Mark mark) {
  Block *body = param.getOwner();
  Operation *firstForward = nullptr, *firstBackward = nullptr;
  SmallVector<OpOperand *> forwardUses, backwardUses;
  for (OpOperand &use : param.getUses()) {
    Operation *user = body->findAncestorOpInBlock(*use.getOwner());
    if (!user || user == update || user == keep)
      continue;
    bool backward = user->hasAttr(HetDialect::getBackwardAttrName());
    Operation *&first = backward ? firstBackward : firstForward;
    if (!first || user->isBeforeInBlock(first))
      first = user;
    (backward ? backwardUses : forwardUses).push_back(&use);
  }
  for (auto [first, uses, backward] :
       {std::make_tuple(firstForward, &forwardUses, false),
        std::make_tuple(firstBackward, &backwardUses, true)}) {
    if (!first)
      continue;
    OpBuilder b(first);
    auto gathered = b.create<AllGatherOp>(param.getLoc(), whole, param, group, /*axis=*/0,
                                          /*by_share=*/true, CollectiveAlgorithm::Ring,
                                          CompressionKind::None, FloatAttr());
    mark(gathered, backward);
    for (OpOperand *use : *uses)
      use->set(gathered);
  }
}

struct HetShardOptimizerPass
    : public mlir::het::impl::HetShardOptimizerBase<HetShardOptimizerPass> {
  using HetShardOptimizerBase::HetShardOptimizerBase;

  void runOnOperation() override {
    if (samples <= 0) {
      getOperation().emitError("het-shard-optimizer: samples must be given (> 0)");
      return signalPassFailure();
    }
    if (level < 1 || level > 3) {
      getOperation().emitError("het-shard-optimizer: level must be 1, 2 or 3, got ") << level;
      return signalPassFailure();
    }
    int64_t index = 0;
    for (StageOp stage : getOperation().getOps<StageOp>()) {
      int64_t stageLevel =
          size_t(index) < stageLevels.size() ? stageLevels[index] : int64_t(level);
      ++index;
      if (stageLevel < 0 || stageLevel > 3) {
        stage.emitError("het-shard-optimizer: stage '")
            << stage.getSymName() << "': level must be 0-3, got " << stageLevel;
        return signalPassFailure();
      }
      if (stageLevel > 0 && failed(shard(stage, stageLevel)))
        return signalPassFailure();
    }
  }

  LogicalResult shard(StageOp stage, int64_t level) {
    // Under tensor parallelism the stage's group (`@stage`) is the
    // replicas of one tensor-parallel index (the runtime's communicator
    // word 0): each rank shards its part of every tensor over the others
    // holding the same part, so blocks are rows of the part.
    if (stage.getReplicas() < 2)
      return success();
    std::vector<int64_t> shares;
    for (ReplicaGroupAttr group : stage.getReplicaGroupList())
      for (int64_t r = 0; r < group.getReplicas(); ++r)
        shares.push_back(group.getSamples());
    int64_t microBatch = stage.getMicroBatchSamples();
    if (microBatch <= 0)
      return stage.emitError("het-shard-optimizer: stage '")
             << stage.getSymName() << "' does not say its replicas' shares (het-partition does)";
    auto names = stage->getAttrOfType<ArrayAttr>(HetDialect::getArgNamesAttrName());
    if (!names)
      return stage.emitError("het-shard-optimizer: stage '")
             << stage.getSymName() << "' lacks het.arg_names (made by het-partition)";
    auto group = SymbolRefAttr::get(stage.getSymNameAttr());
    SmallVector<Operation *> updates;
    stage.getBodyBlock().walk([&](Operation *op) {
      if (isa<AdamOp, SGDOp>(op))
        updates.push_back(op);
    });
    SmallVector<Attribute> sharded;
    // Gradient clipping's squared norms whose operands became blocks: the
    // operand numbers, rebuilt once every update is sharded.
    llvm::MapVector<SquaredNormOp, llvm::SmallSetVector<unsigned, 8>> blockNorms;
    for (Operation *op : updates) {
      Value param = op->getOperand(0), grad = op->getOperand(1);
      if (!grad.hasOneUse())
        continue;
      // The gradient: the stage's all-reduce, with loss scaling one result
      // of the unscaling that follows it, with gradient clipping one result
      // of the clipping that follows those.
      auto [clip, clipped, norm, normOperand] = clippingOf(grad);
      if (grad.getDefiningOp<ClipByNormOp>() && !clip)
        continue; // clipped, but not as het-partition splits it: leave it whole
      Value scaled = clip ? clip.getGradients()[clipped] : grad;
      auto unscale = scaled.getDefiningOp<UnscaleGradientsOp>();
      unsigned unscaled = 0; // the gradient's index among the unscaling's
      Value reduced = scaled;
      if (unscale) {
        unscaled = cast<OpResult>(scaled).getResultNumber() - 1;
        reduced = unscale.getGradients()[unscaled];
      }
      auto reduce = reduced.getDefiningOp<AllReduceOp>();
      // (Read by the clipping and its norm when these read it directly.)
      if (!reduce || reduce.getGroup() != group || (!reduced.hasOneUse() && reduced != scaled) ||
          reduce.getCompression() != CompressionKind::None)
        continue; // not the stage's plain gradient all-reduce: leave it whole
      // The state operands and their new values: Adam's two moments, SGD's
      // momentum buffer. Each must be the stage's own: an argument read by
      // this update (and its select) alone, whose new value only leaves
      // the stage.
      SmallVector<std::pair<unsigned, unsigned>> state; // operand, result
      if (isa<AdamOp>(op))
        state = {{2, 1}, {3, 2}};
      else
        state = {{2, 1}};
      // Result k's loss-scaling select (null without loss scaling).
      SmallVector<SelectOp> keeps(op->getNumResults());
      for (unsigned k = 0; k < op->getNumResults(); ++k)
        keeps[k] = unscale ? keepingSelect(op->getResult(k), op->getOperand(k == 0 ? 0 : state[k - 1].first))
                           : nullptr;
      if (unscale && llvm::any_of(keeps, [](SelectOp s) { return !s; }))
        continue;
      auto leaving = [&](unsigned k) -> Value {
        return keeps[k] ? Value(keeps[k].getResult()) : Value(op->getResult(k));
      };
      bool owned = llvm::all_of(state, [&](auto s) {
        Value old = op->getOperand(s.first);
        unsigned uses = std::distance(old.use_begin(), old.use_end());
        return isa<BlockArgument>(old) && uses == (keeps[s.second] ? 2u : 1u) &&
               onlyYielded(leaving(s.second));
      });
      if (!owned)
        continue;
      auto type = cast<RankedTensorType>(param.getType());
      if (type.getRank() < 1 || !type.hasStaticShape())
        continue;
      int64_t rows = type.getDimSize(0);
      std::vector<::het::ShareBlock> blocks = ::het::shareBlocks(rows, shares);
      if (llvm::any_of(blocks, [](const ::het::ShareBlock &b) { return b.held == 0; }))
        continue; // fewer rows than replicas need: kept whole
      SmallVector<int64_t> blockShape(type.getShape());
      blockShape[0] = ::het::shareBlockRows(rows, samples, microBatch);
      auto blockType = RankedTensorType::get(blockShape, type.getElementType());

      OpBuilder b(op);
      Location loc = op->getLoc();
      Attribute layer = op->getAttr(HetDialect::getLayerAttrName());
      auto mark = [&](Operation *created, bool backward) {
        if (layer)
          created->setAttr(HetDialect::getLayerAttrName(), layer);
        if (backward)
          created->setAttr(HetDialect::getBackwardAttrName(), b.getUnitAttr());
      };
      // ZeRO-3 holds the parameter itself in blocks: it must be the stage's
      // argument, its new value only leaving the stage.
      auto paramArgument = dyn_cast<BlockArgument>(param);
      bool shardParam = level >= 3 && paramArgument && onlyYielded(leaving(0));
      // ZeRO-2 and 3 reduce-scatter each micro-batch's gradient in the
      // backward pass, just after it is computed, so the whole gradient
      // dies at once and only a block of it is accumulated between
      // micro-batches; ZeRO-1 reduce-scatters the accumulated gradient in
      // the update.
      OpBuilder scatterAt(unscale ? unscale.getOperation()
                          : clip  ? norm.getOperation()
                                  : op);
      Value dw = reduce.getInput();
      if (Operation *def = dw.getDefiningOp(); level >= 2 && def && def->getBlock() == op->getBlock())
        scatterAt.setInsertionPointAfter(def);
      auto scattered = scatterAt.create<ReduceScatterOp>(
          loc, blockType, dw, group, reduce.getReduction(), /*axis=*/0,
          /*by_share=*/true, CollectiveAlgorithm::Ring, CompressionKind::None, FloatAttr());
      mark(scattered, /*backward=*/level >= 2);
      // With loss scaling the blocks are unscaled, and overflow is looked
      // for in them: the job-wide max of every rank's flag that follows
      // covers each block of every replica.
      Value gradBlock = scattered;
      if (unscale) {
        unscale->setOperand(1 + unscaled, scattered);
        unscale->getResult(1 + unscaled).setType(blockType);
        gradBlock = unscale->getResult(1 + unscaled);
      }
      // Clipping scales the block; the stage's squared norm adds the
      // block's squares, counted once (every row is one replica's).
      if (clip) {
        norm->setOperand(normOperand, gradBlock);
        blockNorms[norm].insert(normOperand);
        clip->setOperand(1 + clipped, gradBlock);
        clip->getResult(clipped).setType(blockType);
        gradBlock = clip->getResult(clipped);
      }
      Value block;
      if (shardParam) {
        gatherBeforeUses(paramArgument, op, keeps[0], group, type, mark);
        paramArgument.setType(blockType);
        sharded.push_back(names[paramArgument.getArgNumber()]);
        block = paramArgument;
      } else {
        auto shard = b.create<ShardOp>(loc, blockType, param, group, /*axis=*/0);
        mark(shard, false);
        block = shard;
      }
      SmallVector<Value> operands(op->getOperands());
      operands[0] = block;
      operands[1] = gradBlock;
      for (auto [operand, result] : state) {
        auto argument = cast<BlockArgument>(op->getOperand(operand));
        argument.setType(blockType);
        sharded.push_back(names[argument.getArgNumber()]);
      }
      SmallVector<Type> resultTypes(op->getNumResults(), blockType);
      OperationState rebuilt(loc, op->getName(), operands, resultTypes, op->getAttrs());
      Operation *update = b.create(rebuilt);
      // The new values replace the old ones; a loss-scaling select then
      // chooses between blocks.
      op->replaceAllUsesWith(update->getResults());
      for (unsigned k = 0; k < op->getNumResults(); ++k)
        if (keeps[k]) {
          if (k == 0)
            keeps[k].getOnTrueMutable().assign(block);
          keeps[k].getResult().setType(blockType);
        }
      if (!shardParam) {
        // The whole parameter: the updated blocks (after the select) joined.
        Value joined = keeps[0] ? Value(keeps[0].getResult()) : Value(update->getResult(0));
        OpBuilder after(joined.getContext());
        after.setInsertionPointAfterValue(joined);
        auto gathered = after.create<AllGatherOp>(loc, type, joined, group, /*axis=*/0,
                                                  /*by_share=*/true, CollectiveAlgorithm::Ring,
                                                  CompressionKind::None, FloatAttr());
        mark(gathered, false);
        joined.replaceAllUsesExcept(gathered, gathered);
      }
      op->erase();
      reduce.erase();
    }
    for (auto &[norm, blocks] : blockNorms)
      splitNorm(norm, blocks.getArrayRef(), int64_t(shares.size()));
    if (!sharded.empty())
      stage->setAttr(kShardedStateAttrName,
                     ArrayAttr::get(stage.getContext(), sharded));
    return success();
  }
};

} // namespace
