//===- ModelFromIR.cpp - walk het ops by het.layer ------------------------===//
#include "het/Plan/ModelFromIR.h"
#include "het/Dialect/Het/Transforms/TensorParallel.h"
#include "het/Plan/Error.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>

namespace het::plan {

static double elements(mlir::Type type) {
  auto shaped = llvm::dyn_cast<mlir::ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  return double(shaped.getNumElements());
}

static double bytes(mlir::Type type) {
  auto shaped = llvm::dyn_cast<mlir::ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  mlir::Type element = shaped.getElementType();
  // index is 64-bit on every target het compiles for; other element types
  // (complex, custom) are not het training data: count them as 8 bytes.
  unsigned bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
  return double(shaped.getNumElements()) * std::max(1u, bits / 8);
}

static double lastDim(mlir::Type type) {
  auto shaped = llvm::dyn_cast<mlir::ShapedType>(type);
  if (!shaped || shaped.getRank() == 0 ||
      shaped.isDynamicDim(shaped.getRank() - 1))
    return 0;
  return double(shaped.getDimSize(shaped.getRank() - 1));
}

// Scores of an attention: queries times keys, per head (0 when not static).
static double attentionScores(mlir::Value query, mlir::Value key) {
  auto q = llvm::dyn_cast<mlir::ShapedType>(query.getType());
  auto k = llvm::dyn_cast<mlir::ShapedType>(key.getType());
  if (!q || !k || !q.hasStaticShape() || !k.hasStaticShape() || q.getRank() < 2 ||
      lastDim(q) == 0)
    return 0;
  return elements(q) / lastDim(q) * k.getDimSize(k.getRank() - 2);
}

// Forward FLOPs of one op.
static double forwardFlops(mlir::Operation *op) {
  llvm::StringRef name = op->getName().getStringRef();
  double out = op->getNumResults() ? elements(op->getResult(0).getType()) : 0;
  if (name == "het.linear" && op->getNumOperands() >= 2)
    // [.., K] x [N, K]^T: 2 K flops per output element.
    return 2 * out * lastDim(op->getOperand(0).getType());
  if (name == "het.linear_grad" && op->getNumResults() >= 1)
    // Input and weight gradients: two products of the forward's size.
    return 4 * elements(op->getOperand(0).getType()) *
           lastDim(op->getResult(0).getType());
  if (name == "het.matmul" && op->getNumOperands() >= 2) {
    auto lhs = llvm::dyn_cast<mlir::ShapedType>(op->getOperand(0).getType());
    auto res = llvm::dyn_cast<mlir::ShapedType>(op->getResult(0).getType());
    if (!lhs || !res || !lhs.hasStaticShape() || lhs.getRank() < 2)
      return 0;
    // K is the lhs dim not in the result's last-two dims: lhs[-1] unless the
    // lhs is transposed, in which case lhs[-2]; use the one that makes
    // M * K = numel(lhs)/batch consistent.
    double k = lhs.getDimSize(lhs.getRank() - 1);
    if (res.getRank() >= 2 &&
        res.getDimSize(res.getRank() - 2) ==
            lhs.getDimSize(lhs.getRank() - 1) &&
        res.getDimSize(res.getRank() - 2) != lhs.getDimSize(lhs.getRank() - 2))
      k = lhs.getDimSize(lhs.getRank() - 2);
    return 2 * out * k;
  }
  if (name == "het.attention" && op->getNumOperands() == 3) {
    // q k^T and p v (2 flops per multiply-add) and the softmax between them
    // (5 per score), over every key: what the three ops it fused count.
    double scores = attentionScores(op->getOperand(0), op->getOperand(1));
    return 2 * scores * lastDim(op->getOperand(0).getType()) + 5 * scores +
           2 * scores * lastDim(op->getResult(0).getType());
  }
  if (name == "het.attention_grad" && op->getNumOperands() == 5) {
    // The scores and probabilities again, then dv = p^T do, dp = do v^T,
    // ds (3 per score), dq = ds k and dk = ds^T q.
    double scores = attentionScores(op->getOperand(1), op->getOperand(2));
    return scores * (6 * lastDim(op->getOperand(1).getType()) +
                     4 * lastDim(op->getOperand(3).getType()) + 8);
  }
  if (name == "het.conv2d" && op->getNumOperands() >= 2) {
    auto filter = llvm::dyn_cast<mlir::ShapedType>(op->getOperand(1).getType());
    if (!filter || !filter.hasStaticShape() || filter.getRank() != 4)
      return 0;
    return 2 * out * double(filter.getNumElements()) / filter.getDimSize(0);
  }
  if (name == "het.elementwise" && op->getNumRegions() == 1) {
    // One FLOP per scalar op of the body, per element.
    double ops = 0;
    for (mlir::Operation &scalar : op->getRegion(0).front())
      if (scalar.getNumResults() && scalar.getName().getStringRef() != "arith.constant")
        ++ops;
    return out * std::max(1.0, ops);
  }
  // RMS norm: a square, a sum and two products per element; its gradient
  // two row sums (g xhat, dy xhat) and the element-wise dx formula.
  if (name == "het.rms_norm")
    return 4 * out;
  // Running statistics: two blends and the unbiased variance, per channel.
  if (name == "het.batch_norm_running_stats")
    return 8 * out;
  if (name == "het.rms_norm_grad")
    return 10 * out;
  if (name == "het.softmax" || name == "het.layer_norm" ||
      name == "het.batch_norm" || name == "het.gelu" ||
      name == "het.cross_entropy")
    return 5 * std::max(out, elements(op->getOperand(0).getType()));
  return out;
}

mlir::func::FuncOp findLayeredFunction(mlir::ModuleOp module,
                                       const std::string &name) {
  auto layered = [](mlir::func::FuncOp f) {
    if (f.isExternal())
      return false;
    for (mlir::Operation &op : f.getBody().front())
      if (op.hasAttr(mlir::het::HetDialect::getLayerAttrName()))
        return true;
    return false;
  };
  mlir::func::FuncOp first, step;
  for (auto f : module.getOps<mlir::func::FuncOp>()) {
    if (!name.empty()) {
      if (f.getName() == name)
        return f;
      continue;
    }
    if (!layered(f))
      continue;
    if (!first)
      first = f;
    if (!step && f.getName().ends_with("_train_step"))
      step = f;
  }
  return step ? step : first;
}

ModelDesc modelFromModule(mlir::ModuleOp module, const std::string &file,
                          const std::string &function) {
  mlir::func::FuncOp func = findLayeredFunction(module, function);
  if (!func)
    fail(file, function.empty() ? "" : "@" + function,
         function.empty() ? "no function with ops carrying het.layer (run "
                            "het-opt --het-infer-layers first?)"
                          : "no such function");

  const auto layerName = mlir::het::HetDialect::getLayerAttrName();
  const auto paramName = mlir::het::HetDialect::getParamAttrName();
  auto layerOf = [&](mlir::Operation *op) -> long {
    if (auto a = op->getAttrOfType<mlir::IntegerAttr>(layerName))
      return a.getInt();
    return -1;
  };

  double batch = 0;
  std::string dtype = "fp32";
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto type = llvm::dyn_cast<mlir::ShapedType>(func.getArgument(i).getType());
    if (!type)
      continue;
    if (func.getArgAttr(i, paramName)) {
      if (type.getElementType().isBF16())
        dtype = "bf16";
      else if (type.getElementType().isF16())
        dtype = "fp16";
      continue;
    }
    if (batch == 0 && type.getRank() >= 1 && !type.isDynamicDim(0))
      batch = double(type.getDimSize(0));
  }
  if (batch <= 0)
    batch = 1;

  auto isGradient = [](mlir::Operation *op) {
    return op->getName().getStringRef().ends_with("_grad");
  };
  bool hasBackward = false;
  func.walk([&](mlir::Operation *op) { hasBackward |= isGradient(op); });

  long maxLayer = -1;
  func.walk(
      [&](mlir::Operation *op) { maxLayer = std::max(maxLayer, layerOf(op)); });
  ModelDesc m;
  m.name = func.getName().str();
  m.file = file;
  m.dtype = dtype;
  m.bytesPerElement = dtype == "fp32" ? 4 : 2;
  m.batch = long(batch);
  m.layers.resize(maxLayer + 1);
  for (long l = 0; l <= maxLayer; ++l)
    m.layers[l].name = "layer" + std::to_string(l);

  // Parameters: at the first layer that uses them.
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (!func.getArgAttr(i, paramName))
      continue;
    long first = -1, last = -1;
    for (mlir::Operation *user : func.getArgument(i).getUsers()) {
      long l = layerOf(user);
      if (l >= 0 && (first < 0 || l < first))
        first = l;
      last = std::max(last, l);
    }
    if (first >= 0 && last > first)
      m.tiedLayers.push_back({int(first), int(last)});
    if (first >= 0) {
      m.layers[first].params += elements(func.getArgument(i).getType());
      m.layers[first].paramTensors.push_back(elements(func.getArgument(i).getType()));
    }
  }

  func.walk([&](mlir::Operation *op) {
    long l = layerOf(op);
    if (l < 0)
      return;
    // A training step's optimizer update is priced by the training setup
    // (bytes of state per parameter), not as a forward op: its results are
    // the step's new weights and moments, neither activations nor stash.
    if (mlir::isa<mlir::het::SGDOp, mlir::het::AdamOp>(op))
      return;
    LayerDesc &d = m.layers[l];
    double f = forwardFlops(op) / batch;
    // In a training step the backward is there to count; in a forward
    // graph it costs about twice the forward.
    double io = 0, results = 0, weights = 0;
    for (mlir::Value v : op->getOperands()) {
      auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
      bool param = arg && arg.getOwner()->getParentOp() == func &&
                   func.getArgAttr(arg.getArgNumber(), paramName);
      (param ? weights : io) += bytes(v.getType());
    }
    for (mlir::Value r : op->getResults())
      results += bytes(r.getType());
    OpCost cost{f, (io + results) / batch, weights};
    if (isGradient(op)) {
      d.bwdFlops += f;
      d.bwdOps.push_back(cost);
      return; // its activations are the forward's, already counted
    }
    d.fwdFlops += f;
    d.fwdOps.push_back(cost);
    if (!hasBackward)
      d.bwdFlops += 2 * f;
    results = 0;
    for (mlir::Value r : op->getResults()) {
      results += bytes(r.getType());
      // Bytes crossing each boundary between this layer and its last user.
      // What the function returns stays where it was made: a training
      // step's updated weights and optimizer state, not activations.
      long last = l;
      for (mlir::Operation *user : r.getUsers()) {
        if (user->hasTrait<mlir::OpTrait::IsTerminator>())
          continue;
        long ul = layerOf(user);
        last = std::max(last, ul < 0 ? maxLayer + 1 : ul);
      }
      for (long b = l; b < std::min(last, maxLayer); ++b)
        m.layers[b].outputBytes += bytes(r.getType()) / batch;
    }
    d.ioBytes += (io + results) / batch;
    d.stashBytes += results / batch;
    // Its backward holds the gradients of its results and of its
    // activation operands together (the layer's output gradient is added
    // below).
    d.gradientBytes = std::max(d.gradientBytes, (io + results) / batch);
    // Its f32 probabilities, which it may or may not hold (LayerDesc).
    if (mlir::isa<mlir::het::AttentionOp>(op))
      d.attentionProbabilityBytes +=
          4 * attentionScores(op->getOperand(0), op->getOperand(1)) / batch;
  });
  // Step inputs with a row per sample, at the layer that reads them first.
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto type = llvm::dyn_cast<mlir::ShapedType>(func.getArgument(i).getType());
    if (!type || func.getArgAttr(i, paramName) || type.getRank() < 1 ||
        type.isDynamicDim(0) || double(type.getDimSize(0)) != batch)
      continue;
    long first = -1;
    for (mlir::Operation *user : func.getArgument(i).getUsers()) {
      long l = layerOf(user);
      if (l >= 0 && (first < 0 || l < first))
        first = l;
    }
    if (first >= 0)
      m.layers[first].dataBytes += bytes(type) / batch;
  }
  for (LayerDesc &d : m.layers) {
    d.gradientBytes += d.outputBytes;
    d.fwdKernels = int(d.fwdOps.size());
    d.bwdKernels = int(d.bwdOps.empty() ? 2 * d.fwdOps.size() : d.bwdOps.size());
  }
  describeTensorParallelism(module, func, m);
  return m;
}

void describeTensorParallelism(mlir::ModuleOp module, mlir::func::FuncOp analyzed,
                               ModelDesc &m) {
  // het-tensor-parallel works on the forward model: the analyzed function
  // if it is one, else the forward function a training step was built from.
  mlir::func::FuncOp forward;
  auto isForward = [](mlir::func::FuncOp f) {
    return !f.getName().ends_with("_train_step") && mlir::het::isForwardModel(f);
  };
  if (isForward(analyzed))
    forward = analyzed;
  for (auto f : module.getOps<mlir::func::FuncOp>())
    if (!forward && isForward(f))
      forward = f;
  if (!forward)
    return; // unknown: every degree splits every layer
  // Each layer on its own: what splits there whatever its neighbours do.
  mlir::het::TensorParallelLayout layout;
  int degree = 1;
  layout.degree = [&](int64_t) { return int64_t(degree); };
  layout.segment = [](int64_t layer) { return layer; };
  for (degree = 2; degree <= 8; degree *= 2) {
    mlir::het::TensorParallelReport report = mlir::het::analyzeTensorParallel(forward, layout);
    for (size_t l = 0; l < m.layers.size(); ++l) {
      char status = report.problems.count(l)          ? 'p'
                    : report.splitParameters.count(l) ? 's'
                                                      : 'r';
      m.layers[l].tensorParallelStatus[degree] = status;
    }
  }
  for (LayerDesc &l : m.layers)
    l.tensorParallel = l.statusAt(2) == 's';
}

void registerModelDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::het::HetDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect,
                  mlir::linalg::LinalgDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect>();
}

/// What a differentiated step's backward holds, per layer and sample.
struct BackwardMemory {
  /// The layer's forward results that the backward reads (what a pipeline
  /// stage keeps as saved.* between its forward and backward functions),
  /// of which `passed` only later layers' backward reads, and per layer
  /// what a stage starting there keeps of earlier layers' results
  /// (LayerDesc).
  std::vector<double> stash, passed, input;
  /// The most the backward's own values (activation gradients and the
  /// like, not the parameters' gradients it returns) hold at once while
  /// the layer's backward ops run: each op's operands and results together.
  std::vector<double> working;
};

/// Forward ops are those before the step's first gradient op, in the
/// body's order; the rest is the backward.
static BackwardMemory analyzeBackward(mlir::func::FuncOp step, size_t layers, double batch) {
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
        double b = bytes(r.getType()) / batch;
        m.stash[size_t(layer)] += b;
        if (ownReader < 0 && lastReader > layer)
          m.passed[size_t(layer)] += b;
        for (long at = layer + 1; at <= lastReader && size_t(at) < layers; ++at)
          m.input[size_t(at)] += b;
      }
      continue;
    }
    if (op.hasTrait<mlir::OpTrait::IsTerminator>())
      break;
    for (mlir::Value r : op.getResults()) {
      if (returned(r) || !perSample(r))
        continue; // a parameter's gradient: not per sample (StageMemory counts it)
      live += bytes(r.getType()) / batch;
      dies.emplace(std::max(at, lastUse(r)), bytes(r.getType()) / batch);
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

/// Replaces each layer's stash (all its forward results) by what the
/// backward reads of them, and its gradient working set (an estimate from
/// its ops) by what the backward's values hold at once (BackwardMemory):
/// of the analysed function itself when it is a training step, else of the
/// fused step het-autodiff and het-fuse build from it, as
/// het-training-pipeline does (gradients only: the optimizer keeps no
/// activations); for an fp32 model, also as autocast to bf16 builds it.
static void memoryFromBackward(mlir::ModuleOp module, ModelDesc &m,
                               std::string &diagnostics) {
  mlir::func::FuncOp analysed = findLayeredFunction(module);
  if (!analysed || m.layers.empty())
    return;
  // `lowPrecision`: as autocast to bf16 trains it (fp16 holds the same
  // bytes).
  auto analyse = [&](bool lowPrecision) -> BackwardMemory {
    mlir::OwningOpRef<mlir::ModuleOp> copy;
    mlir::func::FuncOp step = analysed;
    if (!analysed.getName().ends_with("_train_step")) {
      copy = module.clone();
      mlir::PassManager pm(module.getContext());
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
      // A model these passes cannot take keeps the forward's estimate:
      // the planner can still price it as a forward graph.
      if (mlir::failed(pm.run(*copy))) {
        diagnostics.clear();
        return {};
      }
      step = copy->lookupSymbol<mlir::func::FuncOp>((analysed.getName() + "_train_step").str());
      if (!step)
        return {};
    } else if (lowPrecision) {
      return {}; // a step as given: its format is its own
    }
    BackwardMemory b = analyzeBackward(step, m.layers.size(), double(m.batch));
    return b.stash.size() == m.layers.size() ? b : BackwardMemory{};
  };
  BackwardMemory full = analyse(false);
  if (full.stash.empty())
    return;
  for (size_t l = 0; l < m.layers.size(); ++l) {
    LayerDesc &d = m.layers[l];
    d.stashBytes = full.stash[l];
    d.passedStashBytes = full.passed[l];
    d.inputStashBytes = full.input[l];
    d.gradientBytes = full.working[l];
  }
  if (m.bytesPerElement != 4)
    return;
  BackwardMemory low = analyse(true);
  for (size_t l = 0; l < m.layers.size() && !low.stash.empty(); ++l)
    m.layers[l].lowPrecision = {true, low.stash[l], low.passed[l], low.input[l], low.working[l]};
}

ModelDesc loadModelMlir(const std::string &path) {
  mlir::DialectRegistry registry;
  registerModelDialects(registry);
  mlir::MLIRContext context(registry);
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(path, &context);
  if (!module)
    fail(path, "",
         "cannot read the model: " +
             (diagnostics.empty() ? std::string("not valid IR") : diagnostics));
  // What het-compile trains: a forward model's matmul + softmax + matmul
  // become one het.attention (het-fuse-attention, as het-training-pipeline
  // runs it), whose backward recomputes the probabilities instead of
  // keeping them. Analysed as written, the scores and probabilities would
  // count as stashed [.., Q, K] tensors that no build keeps that way.
  mlir::PassManager fusion(&context);
  fusion.addNestedPass<mlir::func::FuncOp>(mlir::het::createHetFuseAttention());
  if (mlir::failed(fusion.run(*module)))
    fail(path, "", "het-fuse-attention failed on the model: " + diagnostics);
  ModelDesc m = modelFromModule(*module, path);
  memoryFromBackward(*module, m, diagnostics);
  return m;
}

ModelDesc loadModelFile(const std::string &path) {
  if (path.size() > 5 && path.substr(path.size() - 5) == ".mlir")
    return loadModelMlir(path);
  return loadModelJson(path);
}

} // namespace het::plan
