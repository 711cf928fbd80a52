//===- TensorParallel.cpp - Megatron-style splitting of a model -----------===//
//
// Two steps: an analysis walks the forward model once per round, deciding
// for each op whether it runs on split values and how, and which parameters
// split along which axis (a parameter whose uses disagree is left whole and
// the walk repeats); the rewrite then inserts the collectives (type-
// preserving ones first), gives the split parameters their shard's shape
// and lets ShapeRespecialization carry the new shapes downstream, gathering
// split values where an op needs them whole.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/Transforms/TensorParallel.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/ModelFunction.h"
#include "het/Dialect/Het/Transforms/Passes.h"
#include "het/Dialect/Het/Transforms/ShapeRespecialization.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <set>

namespace mlir::het {
#define GEN_PASS_DEF_HETTENSORPARALLEL
#include "het/Dialect/Het/Transforms/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;

namespace {

int64_t layerOf(Operation *op) {
  if (auto a = op->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName()))
    return a.getInt();
  return -1;
}

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A split value: along which dimension, by how many devices, in which
/// segment.
struct Split {
  int64_t dim, degree, segment;
};

struct Decisions {
  llvm::DenseMap<Value, Split> split;
  llvm::MapVector<unsigned, std::pair<int64_t, int64_t>> parameters; // arg -> (axis, degree)
  SmallVector<Operation *> column, row, vocabulary;
  /// Operands to gather before their op: (op, operand index) -> split.
  llvm::MapVector<Operation *, SmallVector<std::pair<unsigned, Split>>> gathers;
  std::map<int64_t, std::string> problems;
  std::map<int64_t, int64_t> splitParameters;
  Operation *problemOp = nullptr;
};

class Analysis {
public:
  Analysis(func::FuncOp f, const TensorParallelLayout &layout) : f(f), layout(layout) {}

  Decisions run() {
    // Repeat until no parameter's uses disagree.
    for (;;) {
      Decisions d;
      wants.clear();
      walk(d);
      bool changed = false;
      for (auto &[arg, axes] : wants)
        if (axes.size() > 1 && !excluded.count(arg)) {
          excluded.insert(arg);
          changed = true;
        }
      if (!changed) {
        for (auto &[arg, axes] : wants)
          if (*axes.begin() >= 0) {
            for (Operation *user : f.getArgument(arg).getUsers())
              if (layerOf(user) >= 0) {
                d.splitParameters[layerOf(user)] += 1;
                break;
              }
          }
        return d;
      }
    }
  }

private:
  func::FuncOp f;
  const TensorParallelLayout &layout;
  std::set<unsigned> excluded;
  std::map<unsigned, std::set<int64_t>> wants; // parameter -> axes its uses want (-1: whole)

  int64_t degreeOf(Operation *op) {
    int64_t layer = layerOf(op);
    return layer >= 0 ? std::max<int64_t>(1, layout.degree(layer)) : 1;
  }
  int64_t segmentOf(Operation *op) {
    int64_t layer = layerOf(op);
    return layer >= 0 ? layout.segment(layer) : -1;
  }

  std::optional<unsigned> parameter(Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &f.getBody().front() ||
        !f.getArgAttr(arg.getArgNumber(), HetDialect::getParamAttrName()))
      return std::nullopt;
    return arg.getArgNumber();
  }

  /// The split of operand `i` of `op` if `op` can use it split (same
  /// segment, same degree); a split value it cannot use is gathered first.
  std::optional<Split> use(Decisions &d, Operation *op, unsigned i) {
    Value v = op->getOperand(i);
    auto it = d.split.find(v);
    if (it == d.split.end())
      return std::nullopt;
    if (it->second.segment == segmentOf(op) && it->second.degree == degreeOf(op))
      return it->second;
    d.gathers[op].push_back({i, it->second});
    return std::nullopt;
  }

  /// `op` runs on whole values: gather its split operands; its parameters
  /// are used whole.
  void whole(Decisions &d, Operation *op) {
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto it = d.split.find(op->getOperand(i));
      if (it != d.split.end() &&
          llvm::none_of(d.gathers[op], [&](auto &g) { return g.first == i; }))
        d.gathers[op].push_back({i, it->second});
      if (auto p = parameter(op->getOperand(i)))
        wants[*p].insert(-1);
    }
    if (d.gathers.count(op) && d.gathers[op].empty())
      d.gathers.erase(op);
  }

  void setSplit(Decisions &d, Value v, int64_t dim, Operation *op) {
    d.split[v] = {dim, degreeOf(op), segmentOf(op)};
  }

  void walk(Decisions &d) {
    for (Operation &op : f.getBody().front()) {
      int64_t T = degreeOf(&op);
      if (T == 1 || isa<func::ReturnOp>(op)) {
        whole(d, &op);
        continue;
      }
      bool handled =
          TypeSwitch<Operation *, bool>(&op)
              .Case([&](LinearOp linear) { return visitLinear(d, linear, T); })
              .Case([&](EmbeddingOp lookup) { return visitEmbedding(d, lookup, T); })
              .Case([&](ReshapeOp reshape) { return visitReshape(d, reshape, T); })
              .Case([&](TransposeOp transpose) {
                auto s = use(d, transpose, 0);
                if (!s)
                  return false;
                auto perm = transpose.getPermutation();
                for (size_t k = 0; k < perm.size(); ++k)
                  if (perm[k] == s->dim)
                    setSplit(d, transpose.getResult(), k, transpose);
                return true;
              })
              .Case([&](MatmulOp matmul) {
                auto a = use(d, matmul, 0), b = use(d, matmul, 1);
                int64_t rank = typeOf(matmul.getResult()).getRank();
                if (!a || !b || a->dim != b->dim || a->dim >= rank - 2 ||
                    typeOf(matmul.getLhs()).getRank() != rank ||
                    typeOf(matmul.getRhs()).getRank() != rank)
                  return false;
                setSplit(d, matmul.getResult(), a->dim, matmul);
                return true;
              })
              .Case([&](SoftmaxOp softmax) {
                auto s = use(d, softmax, 0);
                int64_t rank = typeOf(softmax.getResult()).getRank();
                int64_t axis = softmax.getAxis() < 0 ? softmax.getAxis() + rank : softmax.getAxis();
                if (!s || s->dim == axis)
                  return false;
                setSplit(d, softmax.getResult(), s->dim, softmax);
                return true;
              })
              .Case<AddOp, SubOp, MulOp, ElementwiseOp>(
                  [&](Operation *e) { return visitElementwise(d, e); })
              .Default([&](Operation *other) {
                // One-operand ops of the same shape (relu, gelu, ...).
                if (other->getNumOperands() == 1 && other->getNumResults() == 1 &&
                    other->hasTrait<OpTrait::SameOperandsAndResultType>() &&
                    isa<HetDialect>(other->getDialect()))
                  if (auto s = use(d, other, 0)) {
                    setSplit(d, other->getResult(0), s->dim, other);
                    return true;
                  }
                return false;
              });
      if (!handled)
        whole(d, &op);
    }
  }

  bool visitLinear(Decisions &d, LinearOp linear, int64_t T) {
    auto weight = parameter(linear.getWeight());
    std::optional<unsigned> bias;
    if (linear.getBias())
      bias = parameter(linear.getBias());
    auto w = typeOf(linear.getWeight());
    auto x = use(d, linear, 0);
    int64_t rank = typeOf(linear.getInput()).getRank();
    if (!weight || excluded.count(*weight) || w.getRank() != 2)
      return false;
    if (x && x->dim == rank - 1 && w.getDimSize(1) % T == 0 &&
        (!linear.getBias() || !d.split.count(linear.getBias()))) {
      // Row-parallel: the contracted features are split.
      wants[*weight].insert(1);
      d.parameters[*weight] = {1, T};
      if (bias)
        wants[*bias].insert(-1);
      d.row.push_back(linear);
      return true;
    }
    if (!x && !d.split.count(linear.getInput()) && w.getDimSize(0) % T == 0 &&
        (!linear.getBias() || (bias && !excluded.count(*bias)))) {
      // Column-parallel: the output features are split.
      wants[*weight].insert(0);
      d.parameters[*weight] = {0, T};
      if (bias) {
        wants[*bias].insert(0);
        d.parameters[*bias] = {0, T};
      }
      d.column.push_back(linear);
      setSplit(d, linear.getResult(), rank - 1, linear);
      return true;
    }
    return false;
  }

  bool visitEmbedding(Decisions &d, EmbeddingOp lookup, int64_t T) {
    auto table = parameter(lookup.getTable());
    if (!table || excluded.count(*table) || d.split.count(lookup.getIndices()) ||
        typeOf(lookup.getTable()).getDimSize(0) % T != 0)
      return false;
    wants[*table].insert(0);
    d.parameters[*table] = {0, T};
    d.vocabulary.push_back(lookup);
    return true;
  }

  bool visitElementwise(Decisions &d, Operation *op) {
    auto result = typeOf(op->getResult(0));
    int64_t rank = result.getRank(), dim = -1;
    bool any = false;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto s = use(d, op, i);
      if (d.split.count(op->getOperand(i)) && !s)
        return false; // split but not usable here
      if (!s)
        continue;
      auto type = typeOf(op->getOperand(i));
      int64_t aligned = s->dim + (rank - type.getRank());
      if ((dim >= 0 && aligned != dim) ||
          type.getDimSize(s->dim) != result.getDimSize(aligned))
        return false;
      dim = aligned;
      any = true;
    }
    if (!any)
      return false;
    // Whole operands must not span the split dimension.
    for (Value v : op->getOperands()) {
      if (d.split.count(v))
        continue;
      auto type = typeOf(v);
      int64_t k = dim - (rank - type.getRank());
      if (k >= 0 && type.getDimSize(k) != 1)
        return false;
    }
    setSplit(d, op->getResult(0), dim, op);
    return true;
  }

  bool visitReshape(Decisions &d, ReshapeOp reshape, int64_t T) {
    auto s = use(d, reshape, 0);
    if (!s)
      return false;
    ArrayRef<int64_t> in = typeOf(reshape.getInput()).getShape(),
                      out = typeOf(reshape.getResult()).getShape();
    FailureOr<SmallVector<ReshapeGroup>> groups = reshapeGroups(in, out);
    if (failed(groups))
      return false;
    // The group of equal products holding the split dimension.
    for (const ReshapeGroup &g : *groups) {
      if (s->dim < int64_t(g.inBegin) || s->dim >= int64_t(g.inEnd))
        continue;
      size_t firstIn = g.inBegin, firstOut = g.outBegin;
      while (firstIn < g.inEnd && in[firstIn] == 1)
        ++firstIn;
      while (firstOut < g.outEnd && out[firstOut] == 1)
        ++firstOut;
      if (int64_t(firstIn) != s->dim || firstOut == g.outEnd)
        return false; // not the group's outermost: the split would not stay contiguous
      if (out[firstOut] % T != 0) {
        d.problems[layerOf(reshape)] =
            "tensor parallelism " + std::to_string(T) + " does not divide the " +
            std::to_string(out[firstOut]) + " parts (attention heads) that " +
            std::to_string(in[s->dim]) + " split features are reshaped into";
        if (!d.problemOp)
          d.problemOp = reshape;
        return false;
      }
      setSplit(d, reshape.getResult(), firstOut, reshape);
      return true;
    }
    return false;
  }
};

void copyLayer(Operation *from, Operation *to) {
  if (auto layer = from->getAttr(HetDialect::getLayerAttrName()))
    to->setAttr(HetDialect::getLayerAttrName(), layer);
}

} // namespace

TensorParallelReport mlir::het::analyzeTensorParallel(func::FuncOp function,
                                                      const TensorParallelLayout &layout) {
  Decisions d = Analysis(function, layout).run();
  return {d.splitParameters, d.problems};
}

LogicalResult mlir::het::splitTensorParallel(func::FuncOp function,
                                             const TensorParallelLayout &layout) {
  Decisions d = Analysis(function, layout).run();
  if (d.problemOp)
    return d.problemOp->emitOpError("in layer ")
           << layerOf(d.problemOp) << ": " << d.problems.begin()->second;
  MLIRContext *ctx = function.getContext();
  auto module = function->getParentOfType<ModuleOp>();
  // One group symbol per degree.
  std::map<int64_t, FlatSymbolRefAttr> groups;
  auto groupOf = [&](int64_t T) {
    auto it = groups.find(T);
    if (it != groups.end())
      return it->second;
    std::string name = "tp" + std::to_string(T);
    if (!module.lookupSymbol(name)) {
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      b.create<TensorParallelGroupOp>(function.getLoc(), name, T);
    }
    return groups[T] = FlatSymbolRefAttr::get(ctx, name);
  };
  auto degreeOf = [&](Operation *op) {
    int64_t layer = layerOf(op);
    return layer >= 0 ? std::max<int64_t>(1, layout.degree(layer)) : int64_t(1);
  };

  // Type-preserving rewrites first.
  llvm::DenseMap<std::pair<Value, int64_t>, Value> copies;
  for (Operation *op : d.column) {
    auto linear = cast<LinearOp>(op);
    int64_t T = degreeOf(op);
    Value x = linear.getInput();
    Value &copy = copies[{x, T}];
    if (!copy) {
      OpBuilder b(ctx);
      if (Operation *def = x.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&function.getBody().front());
      auto c = b.create<TensorParallelCopyOp>(op->getLoc(), x, groupOf(T));
      copyLayer(op, c);
      copy = c.getResult();
    }
    linear.getInputMutable().assign(copy);
  }
  for (Operation *op : d.row) {
    auto linear = cast<LinearOp>(op);
    int64_t T = degreeOf(op);
    OpBuilder b(op);
    Location loc = op->getLoc();
    auto partial = b.create<LinearOp>(loc, linear.getInput(), linear.getWeight(), Value(),
                                      Activation::None);
    auto joined = b.create<AllReduceOp>(loc, partial.getType(), partial, groupOf(T),
                                        ReductionKind::Sum, CollectiveAlgorithm::Ring,
                                        CompressionKind::None, FloatAttr());
    Value out = joined;
    SmallVector<Operation *> made{partial, joined};
    if (linear.getBias()) {
      out = b.create<AddOp>(loc, out, linear.getBias());
      made.push_back(out.getDefiningOp());
    }
    if (linear.getActivation() == Activation::ReLU) {
      out = b.create<ReluOp>(loc, out.getType(), out);
      made.push_back(out.getDefiningOp());
    } else if (linear.getActivation() == Activation::GELU) {
      out = b.create<GeluOp>(loc, out.getType(), out, GeluApproximation::None);
      made.push_back(out.getDefiningOp());
    }
    for (Operation *m : made)
      copyLayer(op, m);
    linear.getResult().replaceAllUsesWith(out);
    d.gathers.erase(op);
    op->erase();
  }
  for (Operation *op : d.vocabulary) {
    auto lookup = cast<EmbeddingOp>(op);
    int64_t T = degreeOf(op);
    lookup.setVocabShardAttr(groupOf(T));
    OpBuilder b(ctx);
    b.setInsertionPointAfter(op);
    auto joined = b.create<AllReduceOp>(op->getLoc(), lookup.getType(), lookup.getResult(),
                                        groupOf(T), ReductionKind::Sum,
                                        CollectiveAlgorithm::Ring, CompressionKind::None,
                                        FloatAttr());
    copyLayer(op, joined);
    lookup.getResult().replaceAllUsesExcept(joined, joined);
  }

  // Split parameters take their shard's shape; the shapes downstream follow,
  // and split values are gathered where an op needs them whole.
  SmallVector<Type> oldTypes(function.getArgumentTypes()), newTypes = oldTypes;
  for (auto &[arg, split] : d.parameters) {
    auto type = cast<RankedTensorType>(oldTypes[arg]);
    SmallVector<int64_t> shape(type.getShape());
    shape[split.first] /= split.second;
    newTypes[arg] = RankedTensorType::get(shape, type.getElementType());
    function.getArgument(arg).setType(newTypes[arg]);
  }
  function.setType(FunctionType::get(ctx, newTypes, function.getResultTypes()));
  RespecializeOptions options;
  options.beforeOp = [&](Operation *op) {
    auto it = d.gathers.find(op);
    if (it == d.gathers.end())
      return;
    OpBuilder b(op);
    for (auto &[index, split] : it->second) {
      Value v = op->getOperand(index);
      auto type = typeOf(v);
      SmallVector<int64_t> shape(type.getShape());
      shape[split.dim] *= split.degree;
      auto gathered = b.create<AllGatherOp>(
          op->getLoc(), RankedTensorType::get(shape, type.getElementType()), v,
          groupOf(split.degree), split.dim, /*by_share=*/false, CollectiveAlgorithm::Ring,
          CompressionKind::None, FloatAttr());
      if (Operation *def = v.getDefiningOp())
        copyLayer(def, gathered);
      op->setOperand(index, gathered);
    }
  };
  if (failed(respecializeShapes(function, options, oldTypes)))
    return failure();
  return verify(function);
}

namespace {

struct HetTensorParallelPass
    : public mlir::het::impl::HetTensorParallelBase<HetTensorParallelPass> {
  using HetTensorParallelBase::HetTensorParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp model = modelFunction(module, function, "het-tensor-parallel");
    if (!model)
      return signalPassFailure();
    std::vector<int64_t> perLayer(layerDegrees.begin(), layerDegrees.end());
    std::vector<int64_t> segments(layerSegments.begin(), layerSegments.end());
    int64_t uniform = degree;
    TensorParallelLayout layout;
    layout.degree = [&](int64_t layer) -> int64_t {
      if (!perLayer.empty())
        return layer < int64_t(perLayer.size()) ? perLayer[layer] : 1;
      return uniform;
    };
    layout.segment = [&](int64_t layer) -> int64_t {
      return layer < int64_t(segments.size()) ? segments[layer] : 0;
    };
    if (failed(splitTensorParallel(model, layout)))
      return signalPassFailure();
  }
};

} // namespace
