//===- BackwardMemory.cpp - what a training step's backward holds ---------===//
//
// A liveness walk over the step's body: the forward values the backward
// reads (by the layer that made them and the layers that read them), and
// the backward's own per-sample values alive at each of its ops.
//
//===----------------------------------------------------------------------===//

#include "het/Plan/BackwardMemory.h"
#include "het/Plan/ModelFromIR.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <map>

namespace het::plan {

BackwardMemory analyzeBackward(mlir::func::FuncOp step, size_t layers, double batch) {
  const auto layerName = mlir::het::HetDialect::getLayerAttrName();
  mlir::Block &body = step.getBody().front();
  std::map<mlir::Operation *, size_t> position;
  size_t firstBackward = SIZE_MAX;
  for (mlir::Operation &op : body) {
    position[&op] = position.size();
    if (firstBackward == SIZE_MAX) {
      op.walk([&](mlir::Operation *inner) {
        if (inner->getName().getStringRef().ends_with("_grad"))
          firstBackward = position[&op];
      });
    }
  }
  if (firstBackward == SIZE_MAX)
    return {};
  auto layerOf = [&](mlir::Operation &op) -> long {
    auto layer = op.getAttrOfType<mlir::IntegerAttr>(layerName);
    return layer && layer.getInt() >= 0 && size_t(layer.getInt()) < layers ? layer.getInt() : -1;
  };
  // The last top-level op that uses `v`, other than the terminator.
  auto lastUse = [&](mlir::Value v) -> size_t {
    size_t last = 0;
    for (mlir::Operation *user : v.getUsers()) {
      mlir::Operation *top = body.findAncestorOpInBlock(*user);
      if (top && !top->hasTrait<mlir::OpTrait::IsTerminator>())
        last = std::max(last, position[top]);
    }
    return last;
  };
  auto returned = [&](mlir::Value v) {
    return llvm::any_of(v.getUsers(), [](mlir::Operation *user) {
      return user->hasTrait<mlir::OpTrait::IsTerminator>();
    });
  };
  // Per-sample values are those computed from the step's data with a row
  // per sample: not a weight's 16-bit copy that the backward reads
  // (StageMemory counts it with the parameters), nor a parameter's gradient
  // or update (shaped as the parameter).
  const auto paramName = mlir::het::HetDialect::getParamAttrName();
  llvm::DenseSet<mlir::Value> fromData;
  llvm::DenseSet<mlir::Type> paramTypes;
  for (mlir::BlockArgument a : body.getArguments()) {
    if (step.getArgAttr(a.getArgNumber(), paramName))
      paramTypes.insert(a.getType());
    else
      fromData.insert(a);
  }
  for (mlir::Operation &op : body)
    if (llvm::any_of(op.getOperands(), [&](mlir::Value v) { return fromData.contains(v); }))
      for (mlir::Value r : op.getResults())
        fromData.insert(r);
  auto perSample = [&](mlir::Value v) {
    auto shaped = llvm::dyn_cast<mlir::ShapedType>(v.getType());
    if (!fromData.contains(v) || !shaped || !shaped.hasStaticShape() || shaped.getRank() < 1)
      return false;
    auto rows = double(shaped.getDimSize(0));
    return rows >= batch && std::fmod(rows, batch) == 0 && !paramTypes.contains(v.getType());
  };
  BackwardMemory m;
  m.stash.assign(layers, 0);
  m.passed.assign(layers, 0);
  m.input.assign(layers, 0);
  m.working.assign(layers, 0);
  m.recomputedFlops.assign(layers, 0);
  m.recomputedBytes.assign(layers, 0);
  const auto recomputedName = mlir::het::HetDialect::getRecomputedAttrName();
  std::multimap<size_t, double> dies; // live backward values by their last use
  double live = 0;
  for (mlir::Operation &op : body) {
    size_t at = position[&op];
    long layer = layerOf(op);
    if (at < firstBackward) {
      for (mlir::Value r : op.getResults()) {
        if (layer < 0 || lastUse(r) < firstBackward || !perSample(r))
          continue;
        // The layers whose backward ops read it.
        long ownReader = -1, lastReader = -1;
        for (mlir::Operation *user : r.getUsers()) {
          mlir::Operation *top = body.findAncestorOpInBlock(*user);
          if (!top || position[top] < firstBackward ||
              top->hasTrait<mlir::OpTrait::IsTerminator>())
            continue;
          long reader = layerOf(*top);
          if (reader == layer)
            ownReader = reader;
          lastReader = std::max(lastReader, reader);
        }
        double b = tensorBytes(r.getType()) / batch;
        m.stash[size_t(layer)] += b;
        if (ownReader < 0 && lastReader > layer)
          m.passed[size_t(layer)] += b;
        for (long l = layer + 1; l <= lastReader && size_t(l) < layers; ++l)
          m.input[size_t(l)] += b;
      }
      continue;
    }
    if (op.hasTrait<mlir::OpTrait::IsTerminator>())
      break;
    if (layer >= 0 && op.hasAttr(recomputedName)) {
      m.recomputedFlops[size_t(layer)] += forwardFlops(&op) / batch;
      double bytes = 0;
      for (mlir::Value v : op.getOperands())
        bytes += tensorBytes(v.getType());
      for (mlir::Value v : op.getResults())
        bytes += tensorBytes(v.getType());
      m.recomputedBytes[size_t(layer)] += bytes / batch;
    }
    for (mlir::Value r : op.getResults()) {
      if (returned(r) || !perSample(r))
        continue; // a parameter's gradient: not per sample (StageMemory counts it)
      live += tensorBytes(r.getType()) / batch;
      dies.emplace(std::max(at, lastUse(r)), tensorBytes(r.getType()) / batch);
    }
    if (layer >= 0)
      m.working[size_t(layer)] = std::max(m.working[size_t(layer)], live);
    for (auto it = dies.begin(); it != dies.end() && it->first <= at;) {
      live -= it->second;
      it = dies.erase(it);
    }
  }
  return m;
}

void memoryFromBackward(mlir::ModuleOp module, ModelDesc &m) {
  mlir::func::FuncOp analysed = findLayeredFunction(module);
  if (!analysed || m.layers.empty())
    return;
  // How the step is built before its backward is analysed: as written;
  // as autocast to bf16 trains it (fp16 holds the same bytes); each rank's
  // part when het-tensor-parallel splits every layer that splits over two
  // devices; with het-recompute's selective mode in every layer.
  enum class Build { AsWritten, LowPrecision, SplitInTwo, Selective };
  auto analyse = [&](Build build) -> BackwardMemory {
    const bool lowPrecision = build == Build::LowPrecision;
    const bool splitInTwo = build == Build::SplitInTwo;
    const bool selective = build == Build::Selective;
    mlir::OwningOpRef<mlir::ModuleOp> copy;
    mlir::func::FuncOp step = analysed;
    if (!analysed.getName().ends_with("_train_step")) {
      copy = module.clone();
      mlir::PassManager pm(module.getContext());
      std::vector<int64_t> degrees;
      if (splitInTwo) {
        for (const LayerDesc &l : m.layers)
          degrees.push_back(l.statusAt(2) == 's' ? 2 : 1);
        if (llvm::none_of(degrees, [](int64_t d) { return d > 1; }))
          return {};
        mlir::het::HetTensorParallelOptions split;
        split.layerDegrees = degrees;
        split.function = analysed.getName().str();
        pm.addPass(mlir::het::createHetTensorParallel(split));
      }
      if (lowPrecision) {
        mlir::het::HetAutocastOptions autocast;
        autocast.precision = "bf16";
        pm.addNestedPass<mlir::func::FuncOp>(mlir::het::createHetAutocast(autocast));
      }
      mlir::het::HetAutodiffOptions options;
      options.function = analysed.getName().str();
      options.optimizer = "none";
      pm.addPass(mlir::het::createHetAutodiff(options));
      // As het-training-pipeline goes on: het-fuse's backward ops read
      // fewer forward results (relu_grad reads the relu's output, which
      // the next linear_grad keeps anyway).
      pm.addPass(mlir::createCanonicalizerPass());
      pm.addNestedPass<mlir::func::FuncOp>(mlir::het::createHetFuse());
      pm.addPass(mlir::createCanonicalizerPass());
      pm.addPass(mlir::createCSEPass());
      if (selective) {
        mlir::het::HetRecomputeOptions recompute;
        recompute.mode = "selective";
        pm.addNestedPass<mlir::func::FuncOp>(mlir::het::createHetRecompute(recompute));
      }
      // A model these passes cannot take keeps the forward's estimate:
      // the planner can still price it as a forward graph.
      if (mlir::failed(pm.run(*copy)))
        return {};
      step = copy->lookupSymbol<mlir::func::FuncOp>((analysed.getName() + "_train_step").str());
      if (!step)
        return {};
    } else if (build != Build::AsWritten) {
      return {}; // a step as given: its format, split and recomputation are its own
    }
    BackwardMemory b = analyzeBackward(step, m.layers.size(), double(m.batch));
    return b.stash.size() == m.layers.size() ? b : BackwardMemory{};
  };
  BackwardMemory full = analyse(Build::AsWritten);
  if (full.stash.empty())
    return;
  for (size_t l = 0; l < m.layers.size(); ++l) {
    LayerDesc &d = m.layers[l];
    d.stashBytes = full.stash[l];
    d.passedStashBytes = full.passed[l];
    d.inputStashBytes = full.input[l];
    d.gradientBytes = full.working[l];
  }
  BackwardMemory selective = analyse(Build::Selective);
  for (size_t l = 0; l < m.layers.size() && !selective.stash.empty(); ++l)
    m.layers[l].selective = {true,
                             selective.stash[l],
                             selective.passed[l],
                             selective.input[l],
                             selective.working[l],
                             selective.recomputedFlops[l],
                             selective.recomputedBytes[l]};
  BackwardMemory split = analyse(Build::SplitInTwo);
  for (size_t l = 0; l < m.layers.size() && !split.stash.empty(); ++l)
    m.layers[l].splitInTwo = {true, split.stash[l], split.passed[l], split.input[l],
                              split.working[l]};
  if (m.bytesPerElement != 4)
    return;
  BackwardMemory low = analyse(Build::LowPrecision);
  for (size_t l = 0; l < m.layers.size() && !low.stash.empty(); ++l)
    m.layers[l].lowPrecision = {true, low.stash[l], low.passed[l], low.input[l], low.working[l]};
}

} // namespace het::plan
