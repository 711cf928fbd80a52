//===- BlockReductions.cpp - long reductions as one block per output -------===//
//
// Mapped one thread per output element, a reduction with few outputs and
// many terms per output runs on a handful of threads, each summing its
// terms alone: the batch norm's per-channel sums of the CNN (64 outputs of
// 65,536 terms each) took 95 % of its step on an H200 that way. Such a
// linalg op becomes a kernel of one block of `blockSize` threads per output
// element: each thread folds every blockSize-th term into a private partial
// result, the block combines the partials with gpu.all_reduce (lowered by
// the NVVM/ROCDL conversions to warp shuffles and a shared-memory exchange
// between warps, with barriers), and thread 0 combines the block's result
// with the output's initial value and stores it.
//
// The op must be a reduction in the sense of matchReduction: its one
// output is updated by a single combiner of a known neutral element (sum,
// product, min, max) applied to it and a value of the inputs. Which ops
// qualify: at least kMinTerms terms per output and at most kMaxOutputs
// outputs (one block each); ops with many outputs keep a thread per output,
// which fills the GPU already.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::het;

namespace {

constexpr int64_t kMinTerms = 1024;
constexpr int64_t kMaxOutputs = 65536;

/// The block-wide reduction combining partials as `combiner` combines
/// terms; std::nullopt for a combiner gpu.all_reduce has no kind for.
std::optional<gpu::AllReduceOperation> allReduceKind(Operation *combiner) {
  using Kind = gpu::AllReduceOperation;
  return llvm::TypeSwitch<Operation *, std::optional<Kind>>(combiner)
      .Case<arith::AddFOp, arith::AddIOp>([](auto) { return Kind::ADD; })
      .Case<arith::MulFOp, arith::MulIOp>([](auto) { return Kind::MUL; })
      .Case<arith::MaxNumFOp>([](auto) { return Kind::MAXNUMF; })
      .Case<arith::MinNumFOp>([](auto) { return Kind::MINNUMF; })
      .Case<arith::MaximumFOp>([](auto) { return Kind::MAXIMUMF; })
      .Case<arith::MinimumFOp>([](auto) { return Kind::MINIMUMF; })
      .Case<arith::MaxSIOp>([](auto) { return Kind::MAXSI; })
      .Case<arith::MinSIOp>([](auto) { return Kind::MINSI; })
      .Case<arith::MaxUIOp>([](auto) { return Kind::MAXUI; })
      .Case<arith::MinUIOp>([](auto) { return Kind::MINUI; })
      .Default([](Operation *) { return std::nullopt; });
}

/// `linear` (an index in [0, product of extents)) as one index per extent,
/// the last varying fastest.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                               ArrayRef<int64_t> extents) {
  SmallVector<Value> out(extents.size());
  for (int64_t d = static_cast<int64_t>(extents.size()) - 1; d >= 0; --d) {
    Value extent = b.create<arith::ConstantIndexOp>(loc, extents[d]);
    out[d] = d == 0 ? linear : b.create<arith::RemUIOp>(loc, linear, extent).getResult();
    if (d > 0)
      linear = b.create<arith::DivUIOp>(loc, linear, extent);
  }
  return out;
}

/// The indices `map` takes of the loop indices `loops`.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map, ValueRange loops) {
  SmallVector<Value> indices;
  for (unsigned r = 0; r < map.getNumResults(); ++r)
    indices.push_back(b.create<affine::AffineApplyOp>(loc, map.getSubMap({r}), loops).getResult());
  return indices;
}

struct Candidate {
  linalg::LinalgOp op;
  Operation *combiner;
  gpu::AllReduceOperation kind;
  TypedAttr neutral;
};

struct BlockReductionsPass : public PassWrapper<BlockReductionsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BlockReductionsPass)
  explicit BlockReductionsPass(int64_t blockSize = 256) : blockSize(blockSize) {}
  StringRef getArgument() const override { return "het-gpu-block-reductions"; }
  StringRef getDescription() const override {
    return "Run long reductions with few outputs as one block of threads per output, the "
           "threads' partial results combined by gpu.all_reduce";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<gpu::GPUDialect, scf::SCFDialect, arith::ArithDialect, affine::AffineDialect,
                    memref::MemRefDialect>();
  }

  /// The op as a block reduction, or std::nullopt when it is none or too
  /// small to gain.
  std::optional<Candidate> match(linalg::LinalgOp op) const {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || op.getNumReductionLoops() == 0)
      return std::nullopt;
    int64_t outputs = 1, terms = 1;
    for (auto [range, iterator] : llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray())) {
      if (ShapedType::isDynamic(range))
        return std::nullopt;
      (linalg::isReductionIterator(iterator) ? terms : outputs) *= range;
    }
    if (terms < kMinTerms || outputs == 0 || outputs > kMaxOutputs)
      return std::nullopt;
    // Each block owns one output element: the output's indices are the
    // parallel loops, each once.
    AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    llvm::SmallBitVector seen(op.getNumLoops());
    for (AffineExpr result : outputMap.getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(result);
      if (!dim || seen.test(dim.getPosition()) ||
          linalg::isReductionIterator(op.getIteratorTypesArray()[dim.getPosition()]))
        return std::nullopt;
      seen.set(dim.getPosition());
    }
    if (int64_t(seen.count()) != int64_t(op.getNumParallelLoops()))
      return std::nullopt;
    // linalg.index only at the top level of the body (the clone maps those).
    bool nestedIndex = false;
    op->getRegion(0).walk(
        [&](linalg::IndexOp index) { nestedIndex |= index->getParentOp() != op.getOperation(); });
    if (nestedIndex)
      return std::nullopt;
    SmallVector<Operation *> combiners;
    if (!matchReduction(op.getRegionOutputArgs(), 0, combiners) || combiners.size() != 1)
      return std::nullopt;
    std::optional<gpu::AllReduceOperation> kind = allReduceKind(combiners.front());
    std::optional<TypedAttr> neutral = arith::getNeutralElement(combiners.front());
    if (!kind || !neutral)
      return std::nullopt;
    // The output is read by the combiner only (its partial results start
    // from the neutral element, not from the output).
    BlockArgument out = op.getRegionOutputArgs().front();
    if (!out.hasOneUse())
      return std::nullopt;
    return Candidate{op, combiners.front(), *kind, *neutral};
  }

  LogicalResult rewrite(Candidate c) {
    // Named reductions (matmul, reduce) as generics: one body to clone.
    linalg::GenericOp op = dyn_cast<linalg::GenericOp>(c.op.getOperation());
    if (!op) {
      IRRewriter rewriter(&getContext());
      rewriter.setInsertionPoint(c.op);
      FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, c.op);
      if (failed(generic))
        return c.op->emitError("het-gpu-block-reductions: cannot generalize ") << c.op->getName();
      op = *generic;
      SmallVector<Operation *> combiners;
      matchReduction(op.getRegionOutputArgs(), 0, combiners);
      c.combiner = combiners.front();
    }
    Location loc = op.getLoc();
    OpBuilder b(op);
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    SmallVector<int64_t> parallelExtents, reductionExtents;
    for (auto [range, iterator] : llvm::zip(ranges, iterators))
      (linalg::isReductionIterator(iterator) ? reductionExtents : parallelExtents).push_back(range);
    int64_t outputs = 1, terms = 1;
    for (int64_t e : parallelExtents)
      outputs *= e;
    for (int64_t e : reductionExtents)
      terms *= e;

    Value one = b.create<arith::ConstantIndexOp>(loc, 1);
    Value grid = b.create<arith::ConstantIndexOp>(loc, outputs);
    Value threads = b.create<arith::ConstantIndexOp>(loc, blockSize);
    auto launch = b.create<gpu::LaunchOp>(loc, grid, one, one, threads, one, one);
    OpBuilder k = OpBuilder::atBlockBegin(&launch.getBody().front());
    Value block = launch.getBlockIds().x, thread = launch.getThreadIds().x;
    Value stride = k.create<arith::ConstantIndexOp>(loc, blockSize);
    Value end = k.create<arith::ConstantIndexOp>(loc, terms);
    Block &body = *op.getBlock();
    BlockArgument out = op.getRegionOutputArgs().front();

    // Every blockSize-th term, from this thread's, into its partial result.
    Value neutral = k.create<arith::ConstantOp>(loc, c.neutral);
    auto termsLoop = k.create<scf::ForOp>(loc, thread, end, stride, ValueRange{neutral});
    {
      OpBuilder l = OpBuilder::atBlockBegin(termsLoop.getBody());
      SmallVector<Value> outputIndex = delinearize(l, loc, block, parallelExtents);
      SmallVector<Value> termIndex =
          delinearize(l, loc, termsLoop.getInductionVar(), reductionExtents);
      SmallVector<Value> loops;
      unsigned p = 0, r = 0;
      for (utils::IteratorType iterator : iterators)
        loops.push_back(linalg::isReductionIterator(iterator) ? termIndex[r++] : outputIndex[p++]);
      IRMapping map;
      for (OpOperand *input : op.getDpsInputOperands()) {
        Value operand = input->get();
        BlockArgument arg = op.getMatchingBlockArgument(input);
        if (!isa<MemRefType>(operand.getType())) {
          map.map(arg, operand); // a scalar input
          continue;
        }
        SmallVector<Value> indices = applyMap(l, loc, op.getMatchingIndexingMap(input), loops);
        map.map(arg, l.create<memref::LoadOp>(loc, operand, indices));
      }
      map.map(out, termsLoop.getRegionIterArgs().front());
      for (Operation &inner : body.without_terminator()) {
        if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
          map.map(index.getResult(), loops[index.getDim()]);
          continue;
        }
        l.clone(inner, map);
      }
      auto yield = cast<linalg::YieldOp>(body.getTerminator());
      l.create<scf::YieldOp>(loc, map.lookup(yield.getValues().front()));
    }

    // The block's threads combine their partials; thread 0 stores.
    Value total =
        k.create<gpu::AllReduceOp>(loc, termsLoop.getResult(0),
                                   gpu::AllReduceOperationAttr::get(k.getContext(), c.kind),
                                   /*uniform=*/true)
            .getResult();
    Value zero = k.create<arith::ConstantIndexOp>(loc, 0);
    Value first = k.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, thread, zero);
    auto store = k.create<scf::IfOp>(loc, first, /*withElseRegion=*/false);
    {
      OpBuilder s = OpBuilder::atBlockBegin(store.thenBlock());
      // Indices recomputed from the block id: nothing of the terms loop is
      // used past the reduction (host emulation splits the kernel there).
      SmallVector<Value> outputIndex = delinearize(s, loc, block, parallelExtents);
      SmallVector<Value> loops;
      unsigned p = 0;
      for (utils::IteratorType iterator : iterators)
        loops.push_back(linalg::isReductionIterator(iterator) ? zero : outputIndex[p++]);
      OpOperand *init = op.getDpsInitOperand(0);
      SmallVector<Value> indices = applyMap(s, loc, op.getMatchingIndexingMap(init), loops);
      Value initial = s.create<memref::LoadOp>(loc, init->get(), indices);
      IRMapping map;
      for (Value operand : c.combiner->getOperands())
        map.map(operand, operand == out ? initial : total);
      Operation *combined = s.clone(*c.combiner, map);
      s.create<memref::StoreOp>(loc, combined->getResult(0), init->get(), indices);
    }
    k.create<gpu::TerminatorOp>(loc);
    op.erase();
    return success();
  }

  void runOnOperation() override {
    SmallVector<Candidate> candidates;
    for (func::FuncOp function : gpuFunctions(getOperation()))
      function.walk([&](linalg::LinalgOp op) {
        if (std::optional<Candidate> c = match(op))
          candidates.push_back(*c);
      });
    for (const Candidate &c : candidates)
      if (failed(rewrite(c)))
        return signalPassFailure();
  }

  int64_t blockSize;
};

} // namespace

std::unique_ptr<Pass> mlir::het::createBlockReductionsPass(int64_t blockSize) {
  return std::make_unique<BlockReductionsPass>(blockSize);
}
