//===- ExpertParallel.cpp - a stage's experts spread over its replicas ----===//
//
// Expert parallelism as GShard, DeepSpeed-MoE and Megatron run it: the
// replicas of a stage (its data-parallel group) hold disjoint blocks of
// every mixture-of-experts layer's experts, so each expert's weights,
// gradients and optimizer state live on one replica. Each replica routes
// and dispatches its own tokens as before; het.moe_to_experts then sends
// every row to the replica holding its expert, the experts' products run
// there over the rows of all replicas, and het.moe_from_experts brings the
// results back for the combine. Blocks may be uneven (a faster or larger
// device holds more experts). The expert weights' gradients are complete on
// their holder (its rows came from every replica, each weighted by its
// share of the batch), so het-partition does not all-reduce them.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/ModelFunction.h"
#include "het/Dialect/Het/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

#include <numeric>
#include <set>

namespace mlir::het {
#define GEN_PASS_DEF_HETEXPERTPARALLEL
#include "het/Dialect/Het/Transforms/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;

namespace {

/// One `stages` entry.
struct ExpertStage {
  std::string name;
  int64_t layerBegin = 0, layerEnd = 0, member = 0;
  std::vector<int64_t> experts, shares;
  /// The experts the built member holds: [first, first + here).
  int64_t first = 0, here = 0;
};

FailureOr<std::vector<int64_t>> numbers(StringRef text) {
  std::vector<int64_t> out;
  SmallVector<StringRef> parts;
  text.split(parts, '/');
  for (StringRef part : parts) {
    int64_t n = 0;
    if (part.getAsInteger(10, n))
      return failure();
    out.push_back(n);
  }
  return out;
}

FailureOr<ExpertStage> parseStage(StringRef text) {
  SmallVector<StringRef> fields;
  text.split(fields, ':');
  ExpertStage s;
  if (fields.size() != 6 || fields[1].getAsInteger(10, s.layerBegin) ||
      fields[2].getAsInteger(10, s.layerEnd) || fields[5].getAsInteger(10, s.member))
    return failure();
  s.name = fields[0].str();
  FailureOr<std::vector<int64_t>> experts = numbers(fields[3]), shares = numbers(fields[4]);
  if (failed(experts) || failed(shares) || experts->size() != shares->size() ||
      experts->empty())
    return failure();
  s.experts = *experts;
  s.shares = *shares;
  if (s.member < 0 || s.member >= int64_t(s.experts.size()))
    return failure();
  for (int64_t m = 0; m < s.member; ++m)
    s.first += s.experts[m];
  s.here = s.experts[s.member];
  return s;
}

int64_t layerOf(Operation *op) {
  if (auto a = op->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName()))
    return a.getInt();
  return -1;
}

void copyLayer(Operation *from, Operation *to) {
  if (Attribute layer = from->getAttr(HetDialect::getLayerAttrName()))
    to->setAttr(HetDialect::getLayerAttrName(), layer);
}

RankedTensorType withLeading(RankedTensorType type, int64_t experts, int64_t rows) {
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = experts;
  shape[1] = rows;
  return RankedTensorType::get(shape, type.getElementType());
}

class ExpertParallelRewrite {
public:
  ExpertParallelRewrite(func::FuncOp f, int64_t samples) : f(f), samples(samples) {}

  LogicalResult run(const ExpertStage &stage) {
    SmallVector<MoEDispatchOp> dispatches;
    f.walk([&](MoEDispatchOp d) {
      int64_t layer = layerOf(d);
      if (!d.getGradient() && layer >= stage.layerBegin && layer < stage.layerEnd)
        dispatches.push_back(d);
    });
    if (dispatches.empty())
      return f.emitError("het-expert-parallel: stage '")
             << stage.name << "' spreads experts over its replicas, but its layers ["
             << stage.layerBegin << ", " << stage.layerEnd
             << ") have no mixture-of-experts layer (het.moe_dispatch)";
    for (MoEDispatchOp d : dispatches)
      if (failed(layer(stage, d)))
        return failure();
    return success();
  }

  /// Parameters of experts other members hold (argument numbers): unused
  /// here once every layer is rewritten.
  std::set<unsigned> others;

private:
  func::FuncOp f;
  int64_t samples;

  InFlightDiagnostic error(const ExpertStage &stage, Operation *op) {
    return op->emitError("het-expert-parallel: stage '")
           << stage.name << "', layer " << layerOf(op) << ": ";
  }

  /// A parameter of the model.
  bool isParameter(Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &f.getBody().front() &&
           f.getArgAttr(arg.getArgNumber(), HetDialect::getParamAttrName());
  }

  /// This member's experts of the weight a grouped product reads, in one
  /// of the two forms models give it: a parameter of all experts stacked
  /// ([E, ...]: it takes this member's block's shape, which the runtime
  /// places), or the experts' own parameters joined (het.reshape of
  /// het.concat along axis 0, as PyTorch's per-expert nn.Linear weights
  /// import: the join takes this member's parameters only, and the others'
  /// leave this member's model).
  FailureOr<Value> localWeight(const ExpertStage &stage, MoEExpertMatmulOp op, int64_t E) {
    Value weight = op.getWeight();
    OpBuilder b(op);
    if (auto arg = dyn_cast<BlockArgument>(weight); arg && isParameter(arg)) {
      for (Operation *user : arg.getUsers())
        if (!isa<MoEExpertMatmulOp>(user))
          return error(stage, user) << "expert weight '" << argumentName(f, arg.getArgNumber())
                                    << "' is also used outside the experts' products";
      auto whole = cast<RankedTensorType>(arg.getType());
      if (whole.getDimSize(0) == E) {
        SmallVector<int64_t> shape(whole.getShape());
        shape[0] = stage.here;
        arg.setType(RankedTensorType::get(shape, whole.getElementType()));
        f.setArgAttr(arg.getArgNumber(), kExpertParallelAttrName, b.getStringAttr(stage.name));
      }
      return weight;
    }
    auto reshape = weight.getDefiningOp<ReshapeOp>();
    auto concat = reshape ? reshape.getInput().getDefiningOp<ConcatOp>() : ConcatOp();
    if (!concat || concat.getAxis() != 0 || int64_t(concat.getInputs().size()) != E ||
        !llvm::all_of(concat.getInputs(), [&](Value v) { return isParameter(v); }))
      return error(stage, op) << "the experts' weight of this product is neither a parameter "
                                 "of all experts nor the experts' own parameters joined, so it "
                                 "cannot be split over the replicas";
    for (Value input : concat.getInputs())
      for (Operation *user : input.getUsers())
        if (user != concat)
          return error(stage, user)
                 << "expert weight '"
                 << argumentName(f, cast<BlockArgument>(input).getArgNumber())
                 << "' is also used outside the experts' products";
    SmallVector<Value> mine(concat.getInputs().begin() + stage.first,
                            concat.getInputs().begin() + stage.first + stage.here);
    for (auto [e, input] : llvm::enumerate(concat.getInputs()))
      if (int64_t(e) < stage.first || int64_t(e) >= stage.first + stage.here)
        others.insert(cast<BlockArgument>(input).getArgNumber());
    auto wholeType = cast<RankedTensorType>(weight.getType());
    SmallVector<int64_t> shape(wholeType.getShape());
    shape[0] = stage.here;
    Value joined = mine.front();
    if (mine.size() > 1) {
      auto part = cast<RankedTensorType>(mine.front().getType());
      SmallVector<int64_t> rows(part.getShape());
      rows[0] *= stage.here;
      auto join = b.create<ConcatOp>(concat.getLoc(),
                                     RankedTensorType::get(rows, part.getElementType()), mine,
                                     b.getI64IntegerAttr(0));
      copyLayer(concat, join);
      joined = join;
    }
    auto local = b.create<ReshapeOp>(reshape.getLoc(),
                                     RankedTensorType::get(shape, wholeType.getElementType()),
                                     joined);
    copyLayer(reshape, local);
    if (reshape->hasOneUse()) {
      reshape->dropAllUses();
      reshape.erase();
      if (concat->use_empty())
        concat.erase();
    }
    return local.getResult();
  }

  LogicalResult layer(const ExpertStage &stage, MoEDispatchOp dispatch) {
    auto buffer = cast<RankedTensorType>(dispatch.getType());
    auto indicesType = cast<RankedTensorType>(dispatch.getIndices().getType());
    if (!buffer.hasStaticShape() || !indicesType.hasStaticShape())
      return error(stage, dispatch) << "needs static shapes";
    int64_t E = buffer.getDimSize(0), C = buffer.getDimSize(1);
    int64_t tokens = indicesType.getDimSize(0), k = indicesType.getDimSize(1);
    int64_t total = std::accumulate(stage.experts.begin(), stage.experts.end(), int64_t(0));
    if (total != E)
      return error(stage, dispatch)
             << "the replicas hold " << total << " experts in all (experts "
             << llvm::join(llvm::map_range(stage.experts,
                                           [](int64_t n) { return std::to_string(n); }),
                           "/")
             << "), but the layer has " << E;
    if (samples <= 0 || tokens % samples != 0)
      return error(stage, dispatch) << tokens << " tokens do not split into " << samples
                                    << " samples";
    // The rows each expert receives: every member's capacity, from its
    // share of the micro-batch.
    std::optional<double> factor;
    if (auto f = dispatch.getCapacityFactorAttr())
      factor = f.getValueAsDouble();
    int64_t received = 0;
    for (int64_t share : stage.shares)
      received += MoEDispatchOp::capacityFor(tokens / samples * share, k, E, factor);
    int64_t here = stage.here;

    // The ops between the dispatch and the combine, in program order.
    llvm::SetVector<Operation *> region;
    llvm::DenseSet<Value> inside{dispatch.getResult()};
    SmallVector<MoECombineOp> exits;
    for (Operation *op = dispatch->getNextNode(); op; op = op->getNextNode()) {
      bool reads = llvm::any_of(op->getOperands(), [&](Value v) { return inside.contains(v); });
      if (!reads)
        continue;
      if (auto combine = dyn_cast<MoECombineOp>(op)) {
        if (!inside.contains(combine.getExpertOutput()) ||
            combine.getIndices() != dispatch.getIndices())
          return error(stage, op) << "combines rows with another routing than its dispatch";
        exits.push_back(combine);
        continue;
      }
      if (auto product = dyn_cast<MoEExpertMatmulOp>(op)) {
        if (!inside.contains(product.getRows()) || inside.contains(product.getWeight()) ||
            product.getIndices() != dispatch.getIndices())
          return error(stage, op) << "a grouped product that does not take the dispatched rows "
                                     "with the dispatch's routing";
      } else {
        // Expert by expert: every tensor operand and result is [E, C, ...]
        // rows of the region.
        for (Value v : op->getOperands())
          if (!inside.contains(v))
            return error(stage, op) << "'" << op->getName()
                                    << "' between the dispatch and the combine mixes the "
                                       "experts' rows with a value from outside them";
        for (Value v : op->getResults()) {
          auto type = dyn_cast<RankedTensorType>(v.getType());
          if (!type || type.getRank() < 2 || type.getDimSize(0) != E || type.getDimSize(1) != C)
            return error(stage, op) << "'" << op->getName()
                                    << "' between the dispatch and the combine does not work "
                                       "expert by expert (its result is not [E, C, ...])";
        }
      }
      region.insert(op);
      for (Value v : op->getResults())
        inside.insert(v);
    }
    if (exits.empty())
      return error(stage, dispatch) << "the dispatched rows reach no het.moe_combine";
    for (Operation *op : region)
      for (Value v : op->getResults())
        for (Operation *user : v.getUsers())
          if (!region.contains(user) && !isa<MoECombineOp>(user))
            return error(stage, user) << "uses the experts' rows outside the layer";

    // The exchange after the dispatch.
    OpBuilder b(dispatch->getContext());
    b.setInsertionPointAfter(dispatch);
    auto group = FlatSymbolRefAttr::get(b.getContext(), stage.name);
    auto experts = b.getDenseI64ArrayAttr(stage.experts);
    auto toExperts = b.create<MoEToExpertsOp>(
        dispatch.getLoc(), withLeading(buffer, here, received),
        RankedTensorType::get({here}, b.getI64Type()), dispatch.getResult(),
        dispatch.getIndices(), group, experts);
    copyLayer(dispatch, toExperts);
    dispatch.getResult().replaceUsesWithIf(toExperts.getExpertRows(), [&](OpOperand &use) {
      return region.contains(use.getOwner()) || isa<MoECombineOp>(use.getOwner());
    });
    // The experts' work on this replica's experts and the received rows.
    for (Operation *op : region) {
      if (auto product = dyn_cast<MoEExpertMatmulOp>(op)) {
        FailureOr<Value> weight = localWeight(stage, product, E);
        if (failed(weight))
          return failure();
        product.getWeightMutable().assign(*weight);
        product.getIndicesMutable().assign(toExperts.getCounts());
      }
      for (Value v : op->getResults())
        v.setType(withLeading(cast<RankedTensorType>(v.getType()), here, received));
    }
    // The rows back before each combine.
    for (MoECombineOp combine : exits) {
      b.setInsertionPoint(combine);
      Value rows = combine.getExpertOutput();
      auto type = cast<RankedTensorType>(rows.getType());
      auto fromExperts = b.create<MoEFromExpertsOp>(
          combine.getLoc(), withLeading(type, E, C), rows, dispatch.getIndices(), group, experts);
      copyLayer(combine, fromExperts);
      combine.getExpertOutputMutable().assign(fromExperts.getRows());
    }
    return success();
  }
};

struct HetExpertParallelPass
    : public mlir::het::impl::HetExpertParallelBase<HetExpertParallelPass> {
  using HetExpertParallelBase::HetExpertParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp model = modelFunction(module, function, "het-expert-parallel");
    if (!model)
      return signalPassFailure();
    ExpertParallelRewrite rewrite(model, samples);
    for (const std::string &text : stages) {
      FailureOr<ExpertStage> stage = parseStage(text);
      if (failed(stage)) {
        module.emitError("het-expert-parallel: bad stages entry '")
            << text << "' (NAME:BEGIN:END:EXPERTS:SHARES:MEMBER, EXPERTS and SHARES "
            << "'/'-separated per replica, MEMBER one of the replicas)";
        return signalPassFailure();
      }
      if (failed(rewrite.run(*stage)))
        return signalPassFailure();
    }
    // Other members' experts leave this member's model.
    llvm::BitVector unused(model.getNumArguments());
    for (unsigned index : rewrite.others) {
      if (!model.getArgument(index).use_empty()) {
        model.emitError("het-expert-parallel: parameter '")
            << argumentName(model, index) << "' of another replica's experts is still used";
        return signalPassFailure();
      }
      unused.set(index);
    }
    model.eraseArguments(unused);
    // The parameters' types changed: the function's signature follows.
    model.setFunctionType(FunctionType::get(&getContext(),
                                            model.getBody().front().getArgumentTypes(),
                                            model.getFunctionType().getResults()));
  }
};

} // namespace
