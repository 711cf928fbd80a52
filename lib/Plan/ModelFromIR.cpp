//===- ModelFromIR.cpp - walk het ops by het.layer ------------------------===//
#include "het/Plan/ModelFromIR.h"
#include "het/Plan/BackwardMemory.h"
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
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>
#include <set>

namespace het::plan {

static double elements(mlir::Type type) {
  auto shaped = llvm::dyn_cast<mlir::ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  return double(shaped.getNumElements());
}

double tensorBytes(mlir::Type type) {
  auto shaped = llvm::dyn_cast<mlir::ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  mlir::Type element = shaped.getElementType();
  // index is 64-bit on every target het compiles for; other element types
  // (complex, custom) are not het training data: count them as 8 bytes.
  unsigned bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
  return double(shaped.getNumElements()) * std::max(1u, bits / 8);
}

/// A parameter only the experts' grouped products (and its update) read: directly (all
/// experts stacked) or joined with the other experts' own parameters
/// (het.concat, then het.reshape to [E, ...]).
static bool isExpertWeight(mlir::Value param) {
  auto product = [](mlir::Operation *user) { return mlir::isa<mlir::het::MoEExpertMatmulOp>(user); };
  if (param.use_empty())
    return false;
  return llvm::all_of(param.getUsers(), [&](mlir::Operation *user) {
    // (A training step's update reads every parameter.)
    if (product(user) || mlir::isa<mlir::het::SGDOp, mlir::het::AdamOp>(user))
      return true;
    if (!mlir::isa<mlir::het::ConcatOp>(user))
      return false;
    return llvm::all_of(user->getUsers(), [&](mlir::Operation *join) {
      return mlir::isa<mlir::het::ReshapeOp>(join) && !join->use_empty() &&
             llvm::all_of(join->getUsers(), product);
    });
  });
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

double forwardFlops(mlir::Operation *op) {
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
  if ((name == "het.moe_expert_matmul" || name == "het.moe_expert_weight_grad") &&
      op->getNumOperands() == 3) {
    // A grouped product over the rows the tokens fill: T k / E per expert
    // on average (at most the capacity C), times K and N.
    auto rows = llvm::dyn_cast<mlir::ShapedType>(op->getOperand(0).getType());
    auto other = llvm::dyn_cast<mlir::ShapedType>(op->getOperand(1).getType());
    auto choices = llvm::dyn_cast<mlir::ShapedType>(op->getOperand(2).getType());
    if (!rows || !other || !choices || !rows.hasStaticShape() || !other.hasStaticShape() ||
        !choices.hasStaticShape() || rows.getRank() != 3 || other.getRank() != 3)
      return 0;
    double experts = rows.getDimSize(0), capacity = rows.getDimSize(1), k = rows.getDimSize(2);
    double filled = std::min(capacity, double(choices.getNumElements()) / experts);
    double n = name == "het.moe_expert_weight_grad"
                   ? other.getDimSize(2)
                   : double(other.getNumElements()) / (experts * k);
    return 2 * experts * filled * k * n;
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
    long first = -1;
    std::set<int> readers;
    for (mlir::Operation *user : func.getArgument(i).getUsers()) {
      long l = layerOf(user);
      if (l >= 0 && (first < 0 || l < first))
        first = l;
      if (l >= 0)
        readers.insert(int(l));
    }
    if (readers.size() > 1)
      m.ties.push_back({std::vector<int>(readers.begin(), readers.end()),
                        double(elements(func.getArgument(i).getType()))});
    if (first >= 0) {
      m.layers[first].params += elements(func.getArgument(i).getType());
      m.layers[first].paramTensors.push_back(elements(func.getArgument(i).getType()));
      if (isExpertWeight(func.getArgument(i)))
        m.layers[first].experts.params += elements(func.getArgument(i).getType());
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
      (param ? weights : io) += tensorBytes(v.getType());
    }
    for (mlir::Value r : op->getResults())
      results += tensorBytes(r.getType());
    OpCost cost{f, (io + results) / batch, weights};
    bool expertProduct =
        mlir::isa<mlir::het::MoEExpertMatmulOp, mlir::het::MoEExpertWeightGradOp>(op);
    if (isGradient(op)) {
      d.bwdFlops += f;
      d.bwdOps.push_back(cost);
      if (expertProduct)
        d.experts.bwdFlops += f;
      return; // its activations are the forward's, already counted
    }
    d.fwdFlops += f;
    d.fwdOps.push_back(cost);
    if (!hasBackward)
      d.bwdFlops += 2 * f;
    if (expertProduct) {
      d.experts.fwdFlops += f;
      if (!hasBackward)
        d.experts.bwdFlops += 2 * f;
    }
    if (auto dispatch = mlir::dyn_cast<mlir::het::MoEDispatchOp>(op);
        dispatch && !dispatch.getGradient()) {
      auto choices = mlir::cast<mlir::ShapedType>(dispatch.getIndices().getType());
      auto tokens = mlir::cast<mlir::ShapedType>(dispatch.getInput().getType());
      if (choices.hasStaticShape() && tokens.hasStaticShape()) {
        d.experts.count = std::max<int>(
            d.experts.count,
            int(mlir::cast<mlir::ShapedType>(dispatch.getType()).getDimSize(0)));
        d.experts.exchangeBytes += double(choices.getNumElements()) *
                                   double(tokens.getDimSize(tokens.getRank() - 1)) *
                                   double(tokens.getElementTypeBitWidth() / 8) / batch;
      }
    }
    results = 0;
    for (mlir::Value r : op->getResults()) {
      results += tensorBytes(r.getType());
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
        m.layers[b].outputBytes += tensorBytes(r.getType()) / batch;
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
      m.layers[first].dataBytes += tensorBytes(type) / batch;
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
  memoryFromBackward(*module, m);
  return m;
}

ModelDesc loadModelFile(const std::string &path) {
  if (path.size() > 5 && path.substr(path.size() - 5) == ".mlir")
    return loadModelMlir(path);
  return loadModelJson(path);
}

} // namespace het::plan
