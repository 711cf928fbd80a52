//===- Evaluator.cpp - the reference evaluator of het functions -----------===//
//
// Walks a function's body in order, keeping one host tensor per SSA value,
// and runs each op with its kernel from Kernels.h. Everything that depends
// on MLIR (attributes, types, diagnostics) stays here; kernels see tensors
// and plain numbers.
//
//===----------------------------------------------------------------------===//

#include "het/Eval/Evaluator.h"

#include "Kernels.h"
#include "ScalarBody.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <variant>

using namespace mlir;
using namespace mlir::het;

namespace het::eval {

namespace {

std::vector<int64_t> vectorOf(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

template <typename T> class Interpreter {
public:
  Interpreter(func::FuncOp function, const RandomContext &random)
      : function(function), random(random) {}

  FailureOr<std::vector<HostArray>> run(const std::vector<HostArray> &arguments);

private:
  using Slot = std::variant<Tensor<T>, Tensor<int64_t>>;

  const Tensor<T> &floats(Value value) { return std::get<Tensor<T>>(values.at(value)); }
  const Tensor<int64_t> &integers(Value value) {
    return std::get<Tensor<int64_t>>(values.at(value));
  }
  const Tensor<T> *optionalFloats(Value value) { return value ? &floats(value) : nullptr; }
  void set(Value value, Tensor<T> tensor) { values[value] = std::move(tensor); }
  void setInt(Value value, Tensor<int64_t> tensor) { values[value] = std::move(tensor); }
  template <size_t N> void setAll(ResultRange results, std::array<Tensor<T>, N> tensors) {
    for (size_t i = 0; i < N; ++i)
      set(results[i], std::move(tensors[i]));
  }

  LogicalResult execute(Operation *op);
  void roundToDeclaredFormats(Operation *op);
  LogicalResult executeHet(Operation *op);
  LogicalResult executeArith(Operation *op);
  LogicalResult checkArgument(unsigned index, const HostArray &array);

  func::FuncOp function;
  RandomContext random;
  llvm::DenseMap<Value, Slot> values;
};

/// The static shape of `value`'s type; an op whose result shape a kernel
/// needs cannot run with unknown sizes.
FailureOr<Shape> staticShape(Operation *op, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!type.hasStaticShape()) {
    op->emitOpError("needs a static result shape in the reference evaluator, got ")
        << type;
    return failure();
  }
  return Shape(type.getShape().begin(), type.getShape().end());
}

ConvGeometry convGeometry(ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
                          ArrayRef<int64_t> dilation, int64_t groups) {
  ConvGeometry g;
  g.strides = {strides[0], strides[1]};
  g.padding = {padding[0], padding[1]};
  g.dilation = {dilation[0], dilation[1]};
  g.groups = groups;
  return g;
}

template <typename Op> PoolGeometry poolGeometry(Op op) {
  PoolGeometry g;
  g.kernel = {op.getKernel()[0], op.getKernel()[1]};
  g.strides = {op.getStrides()[0], op.getStrides()[1]};
  g.padding = {op.getPadding()[0], op.getPadding()[1]};
  return g;
}

ActivationKind activationKind(Activation activation) {
  switch (activation) {
  case Activation::None: return ActivationKind::None;
  case Activation::ReLU: return ActivationKind::ReLU;
  case Activation::GELU: return ActivationKind::GELU;
  }
  return ActivationKind::None;
}

} // namespace

template <typename T>
LogicalResult Interpreter<T>::checkArgument(unsigned index, const HostArray &array) {
  auto type = dyn_cast<RankedTensorType>(function.getArgument(index).getType());
  std::string key = argumentName(function, index);
  if (!type)
    return function.emitError() << "argument '" << key << "' has type "
                                << function.getArgument(index).getType()
                                << ", which the evaluator cannot feed (ranked tensors only)";
  bool wantInteger = isa<IntegerType>(type.getElementType());
  if (wantInteger != array.isInteger())
    return function.emitError() << "argument '" << key << "' is " << type
                                << " but was given " << array.describe();
  bool shapeMatches = type.getRank() == static_cast<int64_t>(array.shape.size());
  for (int64_t d = 0; shapeMatches && d < type.getRank(); ++d)
    shapeMatches = type.isDynamicDim(d) || type.getDimSize(d) == array.shape[d];
  if (!shapeMatches)
    return function.emitError() << "argument '" << key << "' is " << type
                                << " but was given " << array.describe();
  return success();
}

template <typename T>
FailureOr<std::vector<HostArray>>
Interpreter<T>::run(const std::vector<HostArray> &arguments) {
  if (function.isExternal())
    return function.emitError("has no body to evaluate");
  if (arguments.size() != function.getNumArguments())
    return function.emitError() << "takes " << function.getNumArguments()
                                << " arguments but " << arguments.size()
                                << " were given";
  for (auto [index, array] : llvm::enumerate(arguments)) {
    if (failed(checkArgument(index, array)))
      return failure();
    Value argument = function.getArgument(index);
    if (array.isInteger()) {
      Tensor<int64_t> tensor(array.shape);
      tensor.data = array.integers;
      setInt(argument, std::move(tensor));
    } else {
      Tensor<T> tensor(array.shape);
      for (int64_t i = 0; i < tensor.size(); ++i)
        tensor[i] = static_cast<T>(array.floats[i]);
      set(argument, std::move(tensor));
    }
  }
  if (!function.getBody().hasOneBlock())
    return function.emitError("must have a single block to be evaluated");
  for (Operation &op : function.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<HostArray> results;
      for (Value value : ret.getOperands()) {
        HostArray array;
        auto type = cast<RankedTensorType>(value.getType());
        if (auto *ints = std::get_if<Tensor<int64_t>>(&values.at(value))) {
          array.kind = ElementKind::I64;
          array.shape = ints->shape;
          array.integers = ints->data;
        } else {
          const Tensor<T> &tensor = floats(value);
          array.kind = type.getElementType().isF64() ? ElementKind::F64 : ElementKind::F32;
          // Results computed in double or better keep double precision.
          if (!std::is_same_v<T, float>)
            array.kind = ElementKind::F64;
          array.shape = tensor.shape;
          array.floats.assign(tensor.data.begin(), tensor.data.end());
        }
        results.push_back(std::move(array));
      }
      return results;
    }
    if (failed(execute(&op)))
      return failure();
  }
  return function.emitError("body does not end in func.return");
}

template <typename T> LogicalResult Interpreter<T>::execute(Operation *op) {
  for (Type type : op->getResultTypes())
    if (!isa<RankedTensorType>(type))
      return op->emitOpError("produces ")
             << type << ", which the reference evaluator does not handle";
  LogicalResult result = failure();
  try {
    if (isa<HetDialect>(op->getDialect()))
      result = executeHet(op);
    else if (isa<arith::ArithDialect>(op->getDialect()))
      result = executeArith(op);
    else
      return op->emitOpError("is not supported by the reference evaluator");
  } catch (const KernelError &error) {
    return op->emitOpError(error.what());
  }
  if (succeeded(result))
    roundToDeclaredFormats(op);
  return result;
}

/// Kernels compute in the evaluator's precision (T); a result declared in a
/// narrower format (bf16, f16: mixed precision) is rounded to it, to nearest
/// with ties to even, as a bf16 kernel that accumulates in f32 rounds its
/// output. So a mixed-precision step evaluates as the compiled one runs.
template <typename T> void Interpreter<T>::roundToDeclaredFormats(Operation *op) {
  for (Value result : op->getResults()) {
    auto element = dyn_cast<FloatType>(cast<RankedTensorType>(result.getType()).getElementType());
    if (!element || element.getWidth() >= 32)
      continue;
    const llvm::fltSemantics &format = element.getFloatSemantics();
    Tensor<T> &tensor = std::get<Tensor<T>>(values[result]);
    for (T &value : tensor.data) {
      // Through double: exact for T = float and double; the 80-bit
      // evaluator rounds to double first (bf16 and f16 have far fewer bits).
      llvm::APFloat x(static_cast<double>(value));
      bool lostInformation = false;
      x.convert(format, llvm::APFloat::rmNearestTiesToEven, &lostInformation);
      x.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lostInformation);
      value = static_cast<T>(x.convertToDouble());
    }
  }
}

/// Arith ops a training step uses on whole tensors: constants, the Adam step
/// counter's increment, and element-wise float arithmetic.
template <typename T> LogicalResult Interpreter<T>::executeArith(Operation *op) {
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense)
      return op->emitOpError("only dense tensor constants are supported by the evaluator");
    Shape shape(dense.getType().getShape().begin(), dense.getType().getShape().end());
    if (isa<FloatType>(dense.getElementType())) {
      Tensor<T> tensor(shape);
      int64_t i = 0;
      for (const APFloat &value : dense.getValues<APFloat>())
        tensor[i++] = static_cast<T>(value.convertToDouble());
      set(constant.getResult(), std::move(tensor));
    } else {
      Tensor<int64_t> tensor(shape);
      int64_t i = 0;
      for (const APInt &value : dense.getValues<APInt>())
        tensor[i++] = value.getSExtValue();
      setInt(constant.getResult(), std::move(tensor));
    }
    return success();
  }
  if (auto add = dyn_cast<arith::AddIOp>(op)) {
    Tensor<int64_t> out = integers(add.getLhs());
    const Tensor<int64_t> &rhs = integers(add.getRhs());
    for (int64_t i = 0; i < out.size(); ++i)
      out[i] += rhs[i];
    setInt(add.getResult(), std::move(out));
    return success();
  }
  auto elementwise = [&](BinaryKind kind) {
    const Tensor<T> &lhs = floats(op->getOperand(0));
    set(op->getResult(0), binary(kind, lhs, floats(op->getOperand(1)), lhs.shape));
    return success();
  };
  if (isa<arith::AddFOp>(op))
    return elementwise(BinaryKind::Add);
  if (isa<arith::SubFOp>(op))
    return elementwise(BinaryKind::Sub);
  if (isa<arith::MulFOp>(op))
    return elementwise(BinaryKind::Mul);
  return op->emitOpError("is not supported by the reference evaluator");
}

template <typename T> LogicalResult Interpreter<T>::executeHet(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      // Element-wise.
      .Case([&](ReluOp o) { set(o.getResult(), relu(floats(o.getInput()))); return success(); })
      .Case([&](ReluGradOp o) {
        set(o.getResult(), reluGrad(floats(o.getGradOutput()), floats(o.getInput())));
        return success();
      })
      .Case([&](GeluOp o) {
        set(o.getResult(), gelu(floats(o.getInput()),
                                o.getApproximate() == GeluApproximation::Tanh));
        return success();
      })
      .Case([&](GeluGradOp o) {
        set(o.getResult(), geluGrad(floats(o.getGradOutput()), floats(o.getInput()),
                                    o.getApproximate() == GeluApproximation::Tanh));
        return success();
      })
      .template Case<AddOp, SubOp, MulOp>([&](auto o) -> LogicalResult {
        BinaryKind kind = isa<AddOp>(op)   ? BinaryKind::Add
                          : isa<SubOp>(op) ? BinaryKind::Sub
                                           : BinaryKind::Mul;
        const Tensor<T> &lhs = floats(o.getLhs()), &rhs = floats(o.getRhs());
        // Shapes known only at run time broadcast as NumPy does.
        Shape shape(std::max(lhs.shape.size(), rhs.shape.size()), 1);
        for (size_t i = 0; i < shape.size(); ++i) {
          int64_t a = i < shape.size() - lhs.shape.size() ? 1 : lhs.shape[i - (shape.size() - lhs.shape.size())];
          int64_t b = i < shape.size() - rhs.shape.size() ? 1 : rhs.shape[i - (shape.size() - rhs.shape.size())];
          shape[i] = a == 1 ? b : a;
        }
        set(o.getResult(), binary(kind, lhs, rhs, shape));
        return success();
      })
      .Case([&](ElementwiseOp o) -> LogicalResult {
        auto body = ScalarBody<T>::compile(o.getBody().front());
        if (failed(body))
          return failure();
        auto shape = staticShape(op, o.getResult());
        if (failed(shape))
          return failure();
        Tensor<T> out(*shape);
        std::vector<std::vector<int64_t>> offsets;
        for (Value input : o.getInputs())
          offsets.push_back(broadcastOffsets(floats(input).shape, *shape));
        std::vector<T> scalars(o.getInputs().size());
        for (int64_t i = 0; i < out.size(); ++i) {
          for (size_t k = 0; k < scalars.size(); ++k)
            scalars[k] = floats(o.getInputs()[k])[offsets[k][i]];
          out[i] = body->run(scalars);
        }
        set(o.getResult(), std::move(out));
        return success();
      })
      .template Case<BroadcastToOp, SumToShapeOp>([&](auto o) -> LogicalResult {
        auto shape = staticShape(op, o.getResult());
        if (failed(shape))
          return failure();
        const Tensor<T> &x = floats(o.getInput());
        set(o.getResult(), isa<BroadcastToOp>(op) ? broadcastTo(x, *shape) : sumToShape(x, *shape));
        return success();
      })
      // Dense layers.
      .Case([&](MatmulOp o) {
        set(o.getResult(), matmul(floats(o.getLhs()), floats(o.getRhs()),
                                  o.getTransposeLhs(), o.getTransposeRhs()));
        return success();
      })
      .Case([&](LinearOp o) {
        set(o.getResult(), linear(floats(o.getInput()), floats(o.getWeight()),
                                  optionalFloats(o.getBias()),
                                  activationKind(o.getActivation())));
        return success();
      })
      .Case([&](LinearGradOp o) {
        setAll(o->getResults(), linearGrad(floats(o.getGradOutput()), floats(o.getInput()),
                                           floats(o.getWeight())));
        return success();
      })
      // Convolution and pooling.
      .Case([&](Conv2dOp o) {
        set(o.getResult(), conv2d(floats(o.getInput()), floats(o.getFilter()),
                                  optionalFloats(o.getBias()),
                                  convGeometry(o.getStrides(), o.getPadding(),
                                               o.getDilation(), o.getGroups())));
        return success();
      })
      .Case([&](Conv2dGradInputOp o) -> LogicalResult {
        auto shape = staticShape(op, o.getResult());
        if (failed(shape))
          return failure();
        set(o.getResult(), conv2dGradInput(floats(o.getGradOutput()), floats(o.getFilter()),
                                           *shape,
                                           convGeometry(o.getStrides(), o.getPadding(),
                                                        o.getDilation(), o.getGroups())));
        return success();
      })
      .Case([&](Conv2dGradFilterOp o) -> LogicalResult {
        auto shape = staticShape(op, o.getResult());
        if (failed(shape))
          return failure();
        set(o.getResult(), conv2dGradFilter(floats(o.getGradOutput()), floats(o.getInput()),
                                            *shape,
                                            convGeometry(o.getStrides(), o.getPadding(),
                                                         o.getDilation(), o.getGroups())));
        return success();
      })
      .Case([&](MaxPool2dOp o) {
        set(o.getResult(), maxPool2d(floats(o.getInput()), poolGeometry(o)));
        return success();
      })
      .Case([&](AvgPool2dOp o) {
        set(o.getResult(), avgPool2d(floats(o.getInput()), poolGeometry(o)));
        return success();
      })
      .Case([&](MaxPool2dGradOp o) {
        set(o.getResult(), maxPool2dGrad(floats(o.getGradOutput()), floats(o.getInput()),
                                         poolGeometry(o)));
        return success();
      })
      .Case([&](AvgPool2dGradOp o) -> LogicalResult {
        auto shape = staticShape(op, o.getResult());
        if (failed(shape))
          return failure();
        set(o.getResult(), avgPool2dGrad(floats(o.getGradOutput()), *shape, poolGeometry(o)));
        return success();
      })
      // Normalization.
      .template Case<BatchNormOp, BatchNormReluOp>([&](auto o) {
        setAll(o->getResults(),
               batchNorm(floats(o.getInput()), floats(o.getScale()), floats(o.getBias()),
                         o.getEpsilon().convertToDouble(), isa<BatchNormReluOp>(op)));
        return success();
      })
      .Case([&](BatchNormInferenceOp o) {
        set(o.getResult(), batchNormInference(floats(o.getInput()), floats(o.getScale()),
                                              floats(o.getBias()), floats(o.getMean()),
                                              floats(o.getVariance()),
                                              o.getEpsilon().convertToDouble()));
        return success();
      })
      .Case([&](BatchNormRunningStatsOp o) {
        setAll(o->getResults(),
               batchNormRunningStats(floats(o.getRunningMean()), floats(o.getRunningVar()),
                                     floats(o.getMean()), floats(o.getInvStd()),
                                     o.getMomentum().convertToDouble(),
                                     o.getEpsilon().convertToDouble(), o.statisticsCount()));
        return success();
      })
      .Case([&](BatchNormGradOp o) {
        setAll(o->getResults(),
               batchNormGrad(floats(o.getGradOutput()), static_cast<const Tensor<T> *>(nullptr),
                             floats(o.getInput()), floats(o.getScale()),
                             floats(o.getSavedMean()), floats(o.getSavedInvStd())));
        return success();
      })
      .Case([&](BatchNormReluGradOp o) {
        setAll(o->getResults(),
               batchNormGrad(floats(o.getGradOutput()), &floats(o.getOutput()),
                             floats(o.getInput()), floats(o.getScale()),
                             floats(o.getSavedMean()), floats(o.getSavedInvStd())));
        return success();
      })
      .Case([&](LayerNormOp o) {
        setAll(o->getResults(), layerNorm(floats(o.getInput()), floats(o.getScale()),
                                          floats(o.getBias()),
                                          o.getEpsilon().convertToDouble()));
        return success();
      })
      .Case([&](LayerNormGradOp o) {
        setAll(o->getResults(),
               layerNormGrad(floats(o.getGradOutput()), floats(o.getInput()),
                             floats(o.getScale()), floats(o.getSavedMean()),
                             floats(o.getSavedRstd())));
        return success();
      })
      .Case([&](RMSNormOp o) {
        setAll(o->getResults(), rmsNorm(floats(o.getInput()), floats(o.getScale()),
                                        o.getEpsilon().convertToDouble()));
        return success();
      })
      .Case([&](RMSNormGradOp o) {
        setAll(o->getResults(),
               rmsNormGrad(floats(o.getGradOutput()), floats(o.getInput()),
                           floats(o.getScale()), floats(o.getSavedRstd())));
        return success();
      })
      // Softmax, losses, embeddings.
      .Case([&](SoftmaxOp o) {
        set(o.getResult(), softmax(floats(o.getInput()), o.getAxis(),
                                   o.getScale().convertToDouble(), o.getCausal()));
        return success();
      })
      .Case([&](SoftmaxGradOp o) {
        set(o.getResult(), softmaxGrad(floats(o.getGradOutput()), floats(o.getOutput()),
                                       o.getAxis(), o.getScale().convertToDouble()));
        return success();
      })
      .Case([&](AttentionOp o) {
        set(o.getResult(), attention(floats(o.getQuery()), floats(o.getKey()),
                                     floats(o.getValue()), o.getScale().convertToDouble(),
                                     o.getCausal()));
        return success();
      })
      .Case([&](AttentionGradOp o) {
        setAll(o->getResults(),
               attentionGrad(floats(o.getGradOutput()), floats(o.getQuery()),
                             floats(o.getKey()), floats(o.getValue()),
                             o.getScale().convertToDouble(), o.getCausal()));
        return success();
      })
      .Case([&](CrossEntropyOp o) {
        set(o.getResult(), crossEntropy(floats(o.getLogits()), integers(o.getLabels())));
        return success();
      })
      .Case([&](CrossEntropyGradOp o) {
        set(o.getResult(), crossEntropyGrad(floats(o.getGradLoss()), floats(o.getLogits()),
                                            integers(o.getLabels())));
        return success();
      })
      .Case([&](EmbeddingOp o) -> LogicalResult {
        if (o.getVocabShard())
          return o.emitOpError("is one member's shard of a tensor-parallel vocabulary; the "
                               "evaluator runs a single process (evaluate the model before "
                               "het-tensor-parallel)");
        set(o.getResult(), embedding(floats(o.getTable()), integers(o.getIndices())));
        return success();
      })
      .Case([&](EmbeddingGradOp o) -> LogicalResult {
        if (o.getVocabShard())
          return o.emitOpError("is one member's shard of a tensor-parallel vocabulary; the "
                               "evaluator runs a single process");
        auto shape = staticShape(op, o.getResult());
        if (failed(shape))
          return failure();
        set(o.getResult(), embeddingGrad(floats(o.getGradOutput()), integers(o.getIndices()),
                                         *shape, 0, 1, o.getPaddingIdx().value_or(-1)));
        return success();
      })
      // Mixture of experts.
      .Case([&](MoERouterOp o) {
        MoERouting<T> routing = moeRouter(floats(o.getLogits()), o.getTopK(), o.getNormalize());
        set(o.getWeights(), std::move(routing.weights));
        setInt(o.getIndices(), std::move(routing.indices));
        return success();
      })
      .Case([&](MoERouterGradOp o) {
        set(o.getResult(), moeRouterGrad(floats(o.getGradWeights()), floats(o.getLogits()),
                                         integers(o.getIndices()), o.getNormalize()));
        return success();
      })
      .Case([&](MoEDispatchOp o) -> LogicalResult {
        auto shape = staticShape(op, o.getResult());
        if (failed(shape))
          return failure();
        set(o.getResult(), moeDispatch(floats(o.getInput()), integers(o.getIndices()),
                                       optionalFloats(o.getWeights()), *shape));
        return success();
      })
      .Case([&](MoECombineOp o) {
        set(o.getResult(), moeCombine(floats(o.getExpertOutput()), integers(o.getIndices()),
                                      optionalFloats(o.getWeights())));
        return success();
      })
      .Case([&](MoESlotGradOp o) {
        set(o.getResult(), moeSlotGrad(floats(o.getTokens()), floats(o.getExpertRows()),
                                       integers(o.getIndices())));
        return success();
      })
      // Expert parallelism: the evaluator is one process, so only a group
      // of one member (every expert here) runs; more is a stage's ranks.
      .Case([&](MoEToExpertsOp o) -> LogicalResult {
        if (o.getExperts().size() != 1)
          return o.emitOpError("exchanges rows between ")
                 << o.getExperts().size()
                 << " members; the evaluator runs a single process (evaluate the model "
                    "before het-expert-parallel, or run the pipeline with het-run)";
        auto [rows, counts] = moeToExpertsHere(floats(o.getRows()), integers(o.getIndices()),
                                               o.getExpertRows().getType().getDimSize(1));
        set(o.getExpertRows(), std::move(rows));
        setInt(o.getCounts(), std::move(counts));
        return success();
      })
      .Case([&](MoEFromExpertsOp o) -> LogicalResult {
        if (o.getExperts().size() != 1)
          return o.emitOpError("exchanges rows between ")
                 << o.getExperts().size()
                 << " members; the evaluator runs a single process (evaluate the model "
                    "before het-expert-parallel, or run the pipeline with het-run)";
        set(o.getRows(), moeFromExpertsHere(floats(o.getExpertRows()), integers(o.getIndices()),
                                            o.getRows().getType().getDimSize(1)));
        return success();
      })
      .Case([&](MoEExpertMatmulOp o) {
        set(o.getResult(), moeExpertMatmul(floats(o.getRows()), floats(o.getWeight()),
                                           integers(o.getIndices()), o.getTransposeRhs()));
        return success();
      })
      .Case([&](MoEExpertWeightGradOp o) {
        set(o.getResult(), moeExpertWeightGrad(floats(o.getRows()), floats(o.getGradOutput()),
                                               integers(o.getIndices()), o.getTransposeResult()));
        return success();
      })
      .Case([&](MoEExpertFractionOp o) -> LogicalResult {
        auto shape = staticShape(op, o.getResult());
        if (failed(shape))
          return failure();
        set(o.getResult(), moeExpertFraction<T>(integers(o.getIndices()), (*shape)[0]));
        return success();
      })
      // Reductions and layout.
      .template Case<ReduceSumOp, ReduceMeanOp>([&](auto o) {
        std::vector<int64_t> axes(o.getAxes().begin(), o.getAxes().end());
        set(o.getResult(), reduceSum(floats(o.getInput()), axes, o.getKeepDims(),
                                     isa<ReduceMeanOp>(op)));
        return success();
      })
      .Case([&](DropoutOp o) {
        set(o.getResult(), dropout(floats(o.getInput()), o.getP().convertToDouble(), o.getSeed(),
                                   o.getStream(), random));
        return success();
      })
      .Case([&](ReduceMaxOp o) {
        std::vector<int64_t> axes(o.getAxes().begin(), o.getAxes().end());
        set(o.getResult(), reduceMax(floats(o.getInput()), axes, o.getKeepDims()));
        return success();
      })
      .Case([&](ConcatOp o) {
        std::vector<const Tensor<T> *> inputs;
        for (Value input : o.getInputs())
          inputs.push_back(&floats(input));
        set(o.getResult(), concat(inputs, o.getAxis()));
        return success();
      })
      .Case([&](SliceOp o) {
        set(o.getResult(), slice(floats(o.getInput()), vectorOf(o.getAxes()),
                                 vectorOf(o.getStarts()), vectorOf(o.getEnds()),
                                 vectorOf(o.getSteps())));
        return success();
      })
      .Case([&](SliceGradOp o) {
        auto type = cast<RankedTensorType>(o.getGradInput().getType());
        set(o.getGradInput(),
            sliceGrad(floats(o.getGradOutput()), vectorOf(o.getAxes()), vectorOf(o.getStarts()),
                      vectorOf(o.getSteps()), Shape(type.getShape().begin(), type.getShape().end())));
        return success();
      })
      // Loss scaling (torch.amp.GradScaler). The reciprocal of the scale is
      // taken in f64 and rounded to f32, as PyTorch takes it.
      .Case([&](UnscaleGradientsOp o) {
        T scale = floats(o.getScale())[0];
        T inverse = static_cast<T>(static_cast<float>(1.0 / static_cast<double>(scale)));
        bool found = false;
        for (auto [gradient, unscaled] : llvm::zip(o.getGradients(), o.getUnscaled())) {
          Tensor<T> g = floats(gradient);
          for (T &v : g.data) {
            found |= !std::isfinite(static_cast<double>(v));
            v *= inverse;
          }
          set(unscaled, std::move(g));
        }
        set(o.getFoundInf(), Tensor<T>(Shape{}, found ? T(1) : T(0)));
        return success();
      })
      // Gradient clipping (torch.nn.utils.clip_grad_norm_), in f32.
      .Case([&](SquaredNormOp o) {
        float total = 0.0f;
        for (Value tensor : o.getTensors()) {
          float squares = 0.0f;
          for (T v : floats(tensor).data)
            squares += static_cast<float>(v) * static_cast<float>(v);
          total += squares;
        }
        total *= static_cast<float>(o.getWeight().convertToDouble());
        set(o.getResult(), Tensor<T>(Shape{}, static_cast<T>(total)));
        return success();
      })
      .Case([&](ClipByNormOp o) {
        float norm = std::sqrt(static_cast<float>(floats(o.getSquaredNorm())[0]));
        float factor =
            std::min(static_cast<float>(o.getMaxNorm().convertToDouble()) / (norm + 1e-6f), 1.0f);
        if (std::isnan(norm))
          factor = norm;
        for (auto [gradient, clipped] : llvm::zip(o.getGradients(), o.getClipped())) {
          Tensor<T> g = floats(gradient);
          for (T &v : g.data)
            v *= static_cast<T>(factor);
          set(clipped, std::move(g));
        }
        return success();
      })
      .Case([&](SelectOp o) {
        bool pick = floats(o.getPredicate())[0] != T(0);
        values[o.getResult()] = values.at(pick ? o.getOnTrue() : o.getOnFalse());
        return success();
      })
      .Case([&](LossScaleUpdateOp o) {
        // PyTorch's _amp_update_scale_, on the scale's ratio to init_scale.
        double ratio = floats(o.getRatio())[0], count = floats(o.getGrowthTracker())[0];
        if (floats(o.getFoundInf())[0] != T(0)) {
          ratio *= o.getBackoffFactor().convertToDouble();
          count = 0;
        } else if (count + 1 >= static_cast<double>(o.getGrowthInterval())) {
          double grown = ratio * o.getGrowthFactor().convertToDouble();
          if (std::isfinite(static_cast<float>(grown * o.getInitScale().convertToDouble())))
            ratio = grown;
          count = 0;
        } else {
          count += 1;
        }
        set(o.getNewRatio(), Tensor<T>(Shape{}, static_cast<T>(static_cast<float>(ratio))));
        set(o.getNewGrowthTracker(), Tensor<T>(Shape{}, static_cast<T>(count)));
        return success();
      })
      // Rounded to the result's format after it runs (roundToDeclaredFormats).
      .Case([&](CastOp o) {
        set(o.getResult(), floats(o.getInput()));
        return success();
      })
      .Case([&](ReshapeOp o) -> LogicalResult {
        auto type = cast<RankedTensorType>(o.getResult().getType());
        Slot slot = values.at(o.getInput());
        int64_t count = std::visit([](auto &t) { return t.size(); }, slot);
        Shape shape(type.getShape().begin(), type.getShape().end());
        int64_t known = 1, unknown = -1;
        for (size_t d = 0; d < shape.size(); ++d) {
          if (ShapedType::isDynamic(shape[d])) {
            if (unknown >= 0)
              return op->emitOpError("the evaluator can infer at most one unknown size, got ")
                     << type;
            unknown = static_cast<int64_t>(d);
          } else {
            known *= shape[d];
          }
        }
        if (unknown >= 0)
          shape[unknown] = known ? count / known : 0;
        if (numElements(shape) != count)
          return op->emitOpError("cannot reshape ") << count << " elements to " << type;
        std::visit([&](auto &t) { t.shape = shape; }, slot);
        values[o.getResult()] = std::move(slot);
        return success();
      })
      .Case([&](TransposeOp o) {
        std::vector<int64_t> perm(o.getPermutation().begin(), o.getPermutation().end());
        const Slot &slot = values.at(o.getInput());
        if (auto *ints = std::get_if<Tensor<int64_t>>(&slot))
          setInt(o.getResult(), transpose(*ints, perm));
        else
          set(o.getResult(), transpose(std::get<Tensor<T>>(slot), perm));
        return success();
      })
      // Optimizers.
      .Case([&](SGDOp o) {
        SgdOptions options;
        options.lr = o.getLr().convertToDouble();
        options.momentum = o.getMomentum().convertToDouble();
        options.weightDecay = o.getWeightDecay().convertToDouble();
        options.nesterov = o.getNesterov();
        setAll(o->getResults(), sgd(floats(o.getParam()), floats(o.getGrad()),
                                    floats(o.getMomentumBuffer()), options));
        return success();
      })
      .Case([&](AdamOp o) {
        AdamOptions options;
        options.lr = o.getLr().convertToDouble();
        options.beta1 = o.getBeta1().convertToDouble();
        options.beta2 = o.getBeta2().convertToDouble();
        options.epsilon = o.getEpsilon().convertToDouble();
        options.weightDecay = o.getWeightDecay().convertToDouble();
        options.decoupled = o.getDecoupled();
        setAll(o->getResults(),
               adam(floats(o.getParam()), floats(o.getGrad()), floats(o.getExpAvg()),
                    floats(o.getExpAvgSq()), integers(o.getStep())[0], options));
        return success();
      })
      // Placement is a no-op on one host.
      .Case([&](TransferOp o) {
        values[o.getResult()] = values.at(o.getInput());
        return success();
      })
      .Default([&](Operation *) {
        return op->emitOpError("is not supported by the reference evaluator (it runs "
                               "compute ops of one function; partitioned programs run "
                               "through het-compile)");
      });
}

FailureOr<std::vector<HostArray>> evaluate(func::FuncOp function,
                                           const std::vector<HostArray> &arguments,
                                           Precision precision, const RandomContext &random) {
  if (precision == Precision::Extended)
    return Interpreter<long double>(function, random).run(arguments);
  if (precision == Precision::F64)
    return Interpreter<double>(function, random).run(arguments);
  return Interpreter<float>(function, random).run(arguments);
}

} // namespace het::eval
