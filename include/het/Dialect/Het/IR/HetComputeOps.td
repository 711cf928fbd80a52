//===- HetComputeOps.td - forward, gradient and optimizer ops -*- tablegen -*-===//
//
// Compute ops work on builtin tensors with value semantics. Result shapes are
// inferred wherever the operands determine them (builders then need no result
// type); the printed form still shows the result type so that a reader never
// has to work it out.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_IR_HETCOMPUTEOPS_TD
#define HET_DIALECT_HET_IR_HETCOMPUTEOPS_TD

include "het/Dialect/Het/IR/HetDialect.td"
include "het/Dialect/Het/IR/HetAttrs.td"
include "het/Dialect/Het/IR/HetTypes.td"
include "het/Dialect/Het/IR/HetInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"

class Het_ComputeOp<string mnemonic, list<Trait> traits = []>
    : Het_Op<mnemonic, !listconcat([Pure], traits)>;

/// An op whose result types come from `inferReturnTypes`, which must be
/// defined in C++ (HetShapeInference.cpp) and is also what verifies shapes.
class Het_InferredComputeOp<string mnemonic, list<Trait> traits = []>
    : Het_ComputeOp<mnemonic, !listconcat([InferTypeOpAdaptor], traits)>;

/// Shorthand for ops whose gradient rule is defined in HetGradients.cpp.
defvar Differentiable = DeclareOpInterfaceMethods<Het_DifferentiableOpInterface>;

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

class Het_UnaryElementwiseOp<string mnemonic, list<Trait> traits = []>
    : Het_ComputeOp<mnemonic, !listconcat([SameOperandsAndResultType, Differentiable], traits)> {
  let arguments = (ins Het_FloatTensor:$input);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Het_ReluOp : Het_UnaryElementwiseOp<"relu"> {
  let summary = "rectified linear unit, max(x, 0)";
  let description = [{
    ```mlir
    %y = het.relu %x : tensor<64x128xf32>
    ```
    `relu(relu(x))` folds to `relu(x)`.
  }];
  let hasFolder = 1;
}

def Het_GeluOp : Het_ComputeOp<"gelu", [SameOperandsAndResultType, Differentiable]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `x * Phi(x)` with the exact normal CDF (`approximate = none`, the
    default) or the tanh approximation used by GPT-2 (`approximate = tanh`).

    ```mlir
    %y = het.gelu %x : tensor<4x16x256xf32>
    %z = het.gelu %x {approximate = #het.gelu_approximation<tanh>} : tensor<4x16x256xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input,
      DefaultValuedAttr<Het_GeluApproximationAttr,
                        "::mlir::het::GeluApproximation::None">:$approximate);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

class Het_BinaryElementwiseOp<string mnemonic, list<Trait> traits = []>
    : Het_InferredComputeOp<mnemonic, !listconcat([Differentiable], traits)> {
  let arguments = (ins Het_FloatTensor:$lhs, Het_FloatTensor:$rhs);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mlir::het::inferBroadcastType(loc, adaptor.getLhs().getType(),
                                             adaptor.getRhs().getType(), types);
    }
  }];
}

def Het_AddOp : Het_BinaryElementwiseOp<"add", [Commutative]> {
  let summary = "element-wise sum with NumPy broadcasting";
  let description = [{
    Operands broadcast as in NumPy: shapes are aligned at the trailing
    dimension and a dimension of size 1 stretches. Both operands must have the
    same element type.

    ```mlir
    %y = het.add %x, %b : tensor<64x128xf32>, tensor<128xf32> -> tensor<64x128xf32>
    ```
  }];
}

def Het_SubOp : Het_BinaryElementwiseOp<"sub"> {
  let summary = "element-wise difference with NumPy broadcasting";
  let description = [{
    ```mlir
    %y = het.sub %a, %b : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
    ```
  }];
}

def Het_MulOp : Het_BinaryElementwiseOp<"mul", [Commutative]> {
  let summary = "element-wise product with NumPy broadcasting";
  let description = [{
    ```mlir
    %y = het.mul %a, %s : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xf32>
    ```
  }];
}

def Het_ElementwiseOp : Het_ComputeOp<"elementwise", [SingleBlock, IsolatedFromAbove, Differentiable]> {
  let summary = "fused element-wise computation described by a scalar body";
  let description = [{
    Made by `het-fuse` from a chain of element-wise ops (one pass over the
    data instead of one per op), and by the PyTorch importer for point-wise
    ops without an op of their own (exp, log, sigmoid, silu, tanh, erf,
    pow, rsqrt, division, where, clamp, ...). The operands broadcast (NumPy
    rules) to the result shape; the body receives one scalar per operand,
    computes with `arith` and `math` ops on scalars, and yields the result
    element. Its gradient differentiates the body (reverse mode over the
    scalar ops, HetElementwiseGradient.cpp).

    ```mlir
    %y = het.elementwise %a, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32> {
    ^bb0(%x: f32, %c: f32):
      %s = arith.addf %x, %c : f32
      %zero = arith.constant 0.0 : f32
      %r = arith.maximumf %s, %zero : f32
      het.yield %r : f32
    }
    ```
  }];
  let arguments = (ins Variadic<Het_FloatTensor>:$inputs);
  let results = (outs Het_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result) $body";
  let builders = [
    // Builds the body too: `bodyBuilder` gets one scalar per input and
    // returns the result element, which the builder yields.
    OpBuilder<(ins "::mlir::Type":$resultType, "::mlir::ValueRange":$inputs,
      "::llvm::function_ref<::mlir::Value(::mlir::OpBuilder &, ::mlir::Location, ::mlir::ValueRange)>":$bodyBuilder)>
  ];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dense layers
//===----------------------------------------------------------------------===//

def Het_MatmulOp : Het_InferredComputeOp<"matmul", [Differentiable]> {
  let summary = "batched matrix product";
  let description = [{
    `lhs` is `[..., M, K]` and `rhs` is `[..., K, N]` (after the optional
    transposes of their last two dimensions); the result is `[..., M, N]`.
    Leading batch dimensions must be equal, or `rhs` may be a plain matrix
    shared by every batch. This covers attention: `q @ k^T` is
    `het.matmul %q, %k {transpose_rhs}`.

    ```mlir
    %s = het.matmul %q, %k {transpose_rhs}
        : tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32> -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$lhs, Het_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def Het_LinearOp : Het_InferredComputeOp<"linear", [Differentiable]> {
  let summary = "fully connected layer, y = act(x W^T + b)";
  let description = [{
    `input` is `[..., in]`, `weight` is `[out, in]` (PyTorch's layout) and the
    optional `bias` is `[out]`; the result is `[..., out]`. `activation`
    (default `none`) is set by `het-fuse` when it folds a following `relu` or
    `gelu` into the layer.

    ```mlir
    %y = het.linear %x, %w, %b : tensor<64x784xf32>, tensor<256x784xf32>, tensor<256xf32> -> tensor<64x256xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input, Het_FloatTensor:$weight,
      Optional<Het_FloatTensor>:$bias,
      DefaultValuedAttr<Het_ActivationAttr, "::mlir::het::Activation::None">:$activation);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight)
    (`,` type($bias)^)? `->` type($result)
  }];
}

def Het_LinearGradOp : Het_InferredComputeOp<"linear_grad"> {
  let summary = "gradients of het.linear with respect to input, weight and bias";
  let description = [{
    Given `grad_output` (`[..., out]`), the layer's `input` (`[..., in]`) and
    `weight` (`[out, in]`), computes `grad_input = grad_output W`,
    `grad_weight = grad_output^T input` (summed over all leading dimensions)
    and `grad_bias = sum(grad_output)`.

    ```mlir
    %dx, %dw, %db = het.linear_grad %dy, %x, %w
        : tensor<64x256xf32>, tensor<64x784xf32>, tensor<256x784xf32>
       -> tensor<64x784xf32>, tensor<256x784xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$input,
                       Het_FloatTensor:$weight);
  let results = (outs Het_FloatTensor:$grad_input, Het_FloatTensor:$grad_weight,
                      Het_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $weight attr-dict `:` type($grad_output) `,`
    type($input) `,` type($weight) `->` type(results)
  }];
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW)
//===----------------------------------------------------------------------===//

def Het_Conv2dOp : Het_InferredComputeOp<"conv2d", [Differentiable]> {
  let summary = "2-D convolution, NCHW input and OIHW filter";
  let description = [{
    `input` is `[N, C, H, W]`, `filter` is `[O, C / groups, KH, KW]` and the
    optional `bias` is `[O]`. `strides`, `padding` (symmetric, per spatial
    dimension) and `dilation` have two entries each. The result is
    `[N, O, (H + 2 ph - dh (KH - 1) - 1) / sh + 1, ...]`.

    ```mlir
    %y = het.conv2d %x, %w {padding = array<i64: 1, 1>}
        : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input, Het_FloatTensor:$filter,
      Optional<Het_FloatTensor>:$bias,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
      DefaultValuedAttr<Het_I64Attr, "1">:$groups);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? attr-dict `:` type($input) `,` type($filter)
    (`,` type($bias)^)? `->` type($result)
  }];
}

def Het_Conv2dGradInputOp : Het_ComputeOp<"conv2d_grad_input"> {
  let summary = "gradient of het.conv2d with respect to its input";
  let description = [{
    The result type is the forward input's type; it is checked by running
    the forward shape rule on it and comparing with `grad_output`.

    ```mlir
    %dx = het.conv2d_grad_input %dy, %w {padding = array<i64: 1, 1>}
        : tensor<8x16x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<8x3x32x32xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$filter,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
      DefaultValuedAttr<Het_I64Attr, "1">:$groups);
  let results = (outs Het_FloatTensor:$grad_input);
  let assemblyFormat = [{
    $grad_output `,` $filter attr-dict `:` type($grad_output) `,` type($filter)
    `->` type($grad_input)
  }];
  let hasVerifier = 1;
}

def Het_Conv2dGradFilterOp : Het_ComputeOp<"conv2d_grad_filter"> {
  let summary = "gradient of het.conv2d with respect to its filter";
  let description = [{
    ```mlir
    %dw = het.conv2d_grad_filter %dy, %x {padding = array<i64: 1, 1>}
        : tensor<8x16x32x32xf32>, tensor<8x3x32x32xf32> -> tensor<16x3x3x3xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$input,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
      DefaultValuedAttr<Het_I64Attr, "1">:$groups);
  let results = (outs Het_FloatTensor:$grad_filter);
  let assemblyFormat = [{
    $grad_output `,` $input attr-dict `:` type($grad_output) `,` type($input)
    `->` type($grad_filter)
  }];
  let hasVerifier = 1;
}

class Het_Pool2dOp<string mnemonic> : Het_InferredComputeOp<mnemonic, [Differentiable]> {
  let arguments = (ins Het_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
      DenseI64ArrayAttr:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mlir::het::inferPool2dType(loc, adaptor.getInput(),
                                          adaptor.getKernel(), adaptor.getStrides(),
                                          adaptor.getPadding(), types);
    }
  }];
}

def Het_MaxPool2dOp : Het_Pool2dOp<"max_pool2d"> {
  let summary = "2-D max pooling over NCHW";
  let description = [{
    Padding counts as minus infinity.

    ```mlir
    %y = het.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}
        : tensor<8x16x32x32xf32> -> tensor<8x16x16x16xf32>
    ```
  }];
}

def Het_AvgPool2dOp : Het_Pool2dOp<"avg_pool2d"> {
  let summary = "2-D average pooling over NCHW";
  let description = [{
    Padding is excluded from the average (PyTorch's
    `count_include_pad=False`). A kernel as large as the image is global
    average pooling.

    ```mlir
    %y = het.avg_pool2d %x {kernel = array<i64: 8, 8>, strides = array<i64: 8, 8>}
        : tensor<8x64x8x8xf32> -> tensor<8x64x1x1xf32>
    ```
  }];
}

class Het_Pool2dGradOp<string mnemonic, list<Trait> traits = []>
    : Het_ComputeOp<mnemonic, traits> {
  let results = (outs Het_FloatTensor:$grad_input);
  let hasVerifier = 1;
}

def Het_MaxPool2dGradOp : Het_Pool2dGradOp<"max_pool2d_grad"> {
  let summary = "gradient of het.max_pool2d";
  let description = [{
    Routes each output gradient to the first maximum of its window in
    `input`.

    ```mlir
    %dx = het.max_pool2d_grad %dy, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}
        : tensor<8x16x16x16xf32>, tensor<8x16x32x32xf32> -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$input,
      DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding);
  let assemblyFormat = [{
    $grad_output `,` $input attr-dict `:` type($grad_output) `,` type($input)
    `->` type($grad_input)
  }];
}

def Het_AvgPool2dGradOp : Het_Pool2dGradOp<"avg_pool2d_grad"> {
  let summary = "gradient of het.avg_pool2d";
  let description = [{
    ```mlir
    %dx = het.avg_pool2d_grad %dy {kernel = array<i64: 8, 8>, strides = array<i64: 8, 8>}
        : tensor<8x64x1x1xf32> -> tensor<8x64x8x8xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output,
      DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding);
  let assemblyFormat = [{
    $grad_output attr-dict `:` type($grad_output) `->` type($grad_input)
  }];
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

class Het_BatchNormOpBase<string mnemonic> : Het_InferredComputeOp<mnemonic, [Differentiable]> {
  let arguments = (ins Het_FloatTensor:$input, Het_FloatTensor:$scale,
      Het_FloatTensor:$bias,
      DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Het_FloatTensor:$output, Het_FloatTensor:$saved_mean,
                      Het_FloatTensor:$saved_inv_std);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias attr-dict `:` type($input) `,` type($scale) `,`
    type($bias) `->` type(results)
  }];
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mlir::het::inferBatchNormTypes(
          loc, adaptor.getInput(), adaptor.getScale(), adaptor.getBias(),
          adaptor.getEpsilon().convertToDouble(), types);
    }
  }];
}

def Het_BatchNormOp : Het_BatchNormOpBase<"batch_norm"> {
  let summary = "batch normalization in training mode";
  let description = [{
    Normalizes `input` (`[N, C, ...]`) per channel with the statistics of the
    batch, then scales and shifts by `scale` and `bias` (`[C]`). Returns the
    batch mean and `1 / sqrt(var + epsilon)` (biased variance), which the
    backward op needs.

    ```mlir
    %y, %mean, %inv_std = het.batch_norm %x, %gamma, %beta
        : tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>
       -> tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>
    ```
  }];
}

def Het_BatchNormReluOp : Het_BatchNormOpBase<"batch_norm_relu"> {
  let summary = "batch normalization followed by relu, fused";
  let description = [{
    Made by `het-fuse` from a `het.batch_norm` whose only use is a
    `het.relu`. Same operands and results as `het.batch_norm`; `output` is
    after the relu.

    ```mlir
    %y, %mean, %inv_std = het.batch_norm_relu %x, %gamma, %beta
        : tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>
       -> tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>
    ```
  }];
}

def Het_BatchNormInferenceOp : Het_InferredComputeOp<"batch_norm_inference", [Differentiable]> {
  let summary = "batch normalization with given (running) statistics";
  let description = [{
    Eval mode (`model.eval()`, or frozen batch norm while fine-tuning): a
    per-channel affine map `(x - mean) / sqrt(variance + epsilon) * scale +
    bias`. Differentiable in every operand, in generic het ops.

    ```mlir
    %y = het.batch_norm_inference %x, %gamma, %beta, %mean, %var
        : tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>,
          tensor<16xf32> -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input, Het_FloatTensor:$scale,
      Het_FloatTensor:$bias, Het_FloatTensor:$mean, Het_FloatTensor:$variance,
      DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Het_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:`
    type($input) `,` type($scale) `,` type($bias) `,` type($mean) `,`
    type($variance) `->` type($output)
  }];
}

def Het_BatchNormRunningStatsOp : Het_InferredComputeOp<"batch_norm_running_stats"> {
  let summary = "the running statistics a training-mode batch norm keeps";
  let description = [{
    What `torch.nn.BatchNorm*d` does to its buffers in training mode, from
    the batch statistics of the `het.batch_norm` (or `batch_norm_relu`) that
    normalized `input` (`[N, C, ...]`):

    ```
    new_mean = (1 - momentum) * running_mean + momentum * mean
    new_var  = (1 - momentum) * running_var
             + momentum * (1 / inv_std^2 - epsilon) * n / (n - 1)
    ```

    `n` is the number of values per channel the statistics were taken over:
    `samples` (the whole micro-batch when the statistics are synchronized
    over a stage's replicas) or else `N`, times the spatial size. The
    variance is PyTorch's unbiased one. `input` is read for its shape only,
    so a model rebatched to another batch size (het-rebatch) stays right.
    Not differentiable: it lies on no path to the loss; its results are
    state a training step returns (`het.state` arguments of the same name).

    ```mlir
    %rm1, %rv1 = het.batch_norm_running_stats %rm, %rv, %mean, %inv_std, %x
        {momentum = 1.000000e-01 : f64}
        : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>,
          tensor<8x16x32x32xf32> -> tensor<16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$running_mean, Het_FloatTensor:$running_var,
      Het_FloatTensor:$mean, Het_FloatTensor:$inv_std, Het_FloatTensor:$input,
      DefaultValuedAttr<F64Attr, "0.1">:$momentum,
      DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
      OptionalAttr<I64Attr>:$samples);
  let results = (outs Het_FloatTensor:$new_mean, Het_FloatTensor:$new_var);
  let assemblyFormat = [{
    $running_mean `,` $running_var `,` $mean `,` $inv_std `,` $input attr-dict `:`
    type($running_mean) `,` type($running_var) `,` type($mean) `,` type($inv_std) `,`
    type($input) `->` type(results)
  }];
  let extraClassDeclaration = [{
    /// n: the values per channel the batch statistics were taken over.
    double statisticsCount();
  }];
}

def Het_BatchNormGradOp : Het_InferredComputeOp<"batch_norm_grad"> {
  let summary = "gradient of het.batch_norm (training mode)";
  let description = [{
    ```mlir
    %dx, %dgamma, %dbeta = het.batch_norm_grad %dy, %x, %gamma, %mean, %inv_std
        : tensor<8x16x32x32xf32>, tensor<8x16x32x32xf32>, tensor<16xf32>,
          tensor<16xf32>, tensor<16xf32>
       -> tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$input,
      Het_FloatTensor:$scale, Het_FloatTensor:$saved_mean,
      Het_FloatTensor:$saved_inv_std);
  let results = (outs Het_FloatTensor:$grad_input, Het_FloatTensor:$grad_scale,
                      Het_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $scale `,` $saved_mean `,` $saved_inv_std
    attr-dict `:` type($grad_output) `,` type($input) `,` type($scale) `,`
    type($saved_mean) `,` type($saved_inv_std) `->` type(results)
  }];
}

def Het_BatchNormReluGradOp : Het_InferredComputeOp<"batch_norm_relu_grad"> {
  let summary = "gradient of het.batch_norm_relu, fused";
  let description = [{
    `output` is the forward result after the relu; its sign is the relu mask,
    so the mask is never materialized.

    ```mlir
    %dx, %dgamma, %dbeta = het.batch_norm_relu_grad %dy, %y, %x, %gamma, %mean, %inv_std
        : tensor<8x16x32x32xf32>, tensor<8x16x32x32xf32>, tensor<8x16x32x32xf32>,
          tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
       -> tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$output,
      Het_FloatTensor:$input, Het_FloatTensor:$scale,
      Het_FloatTensor:$saved_mean, Het_FloatTensor:$saved_inv_std);
  let results = (outs Het_FloatTensor:$grad_input, Het_FloatTensor:$grad_scale,
                      Het_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $grad_output `,` $output `,` $input `,` $scale `,` $saved_mean `,`
    $saved_inv_std attr-dict `:` type($grad_output) `,` type($output) `,`
    type($input) `,` type($scale) `,` type($saved_mean) `,`
    type($saved_inv_std) `->` type(results)
  }];
}

def Het_LayerNormOp : Het_InferredComputeOp<"layer_norm", [Differentiable]> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    Normalizes each row of `input` (`[..., D]`) and scales/shifts by
    `scale` and `bias` (`[D]`). Also returns the per-row mean and reciprocal
    standard deviation (`[...]`) for the backward op.

    ```mlir
    %y, %mean, %rstd = het.layer_norm %x, %g, %b
        : tensor<4x16x64xf32>, tensor<64xf32>, tensor<64xf32>
       -> tensor<4x16x64xf32>, tensor<4x16xf32>, tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input, Het_FloatTensor:$scale,
      Het_FloatTensor:$bias, DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Het_FloatTensor:$output, Het_FloatTensor:$saved_mean,
                      Het_FloatTensor:$saved_rstd);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias attr-dict `:` type($input) `,` type($scale) `,`
    type($bias) `->` type(results)
  }];
}

def Het_LayerNormGradOp : Het_InferredComputeOp<"layer_norm_grad"> {
  let summary = "gradient of het.layer_norm";
  let description = [{
    ```mlir
    %dx, %dg, %db = het.layer_norm_grad %dy, %x, %g, %mean, %rstd
        : tensor<4x16x64xf32>, tensor<4x16x64xf32>, tensor<64xf32>,
          tensor<4x16xf32>, tensor<4x16xf32>
       -> tensor<4x16x64xf32>, tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$input,
      Het_FloatTensor:$scale, Het_FloatTensor:$saved_mean,
      Het_FloatTensor:$saved_rstd);
  let results = (outs Het_FloatTensor:$grad_input, Het_FloatTensor:$grad_scale,
                      Het_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $scale `,` $saved_mean `,` $saved_rstd
    attr-dict `:` type($grad_output) `,` type($input) `,` type($scale) `,`
    type($saved_mean) `,` type($saved_rstd) `->` type(results)
  }];
}

def Het_RMSNormOp : Het_InferredComputeOp<"rms_norm", [Differentiable]> {
  let summary = "root-mean-square normalization over the last dimension";
  let description = [{
    Scales each row of `input` (`[..., D]`) by the reciprocal of its root
    mean square and multiplies by `scale` (`[D]`), as Llama's `RMSNorm` and
    `torch.nn.RMSNorm` do: `rstd = 1 / sqrt(mean(x^2) + epsilon)` over the
    last dimension, `y = x * rstd * scale`. There is no centring and no
    bias. `epsilon` defaults to Llama's `1e-6`. Also returns the per-row
    `rstd` (`[...]`) for the backward op.

    ```mlir
    %y, %rstd = het.rms_norm %x, %g
        : tensor<4x16x64xf32>, tensor<64xf32> -> tensor<4x16x64xf32>, tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input, Het_FloatTensor:$scale,
      DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs Het_FloatTensor:$output, Het_FloatTensor:$saved_rstd);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` type($input) `,` type($scale) `->` type(results)
  }];
}

def Het_RMSNormGradOp : Het_InferredComputeOp<"rms_norm_grad"> {
  let summary = "gradient of het.rms_norm";
  let description = [{
    With `xhat = x * rstd` and `g = dy * scale`, per row:
    `dx = rstd * (g - xhat * mean(g * xhat))`; `dscale` sums `dy * xhat`
    over all rows.

    ```mlir
    %dx, %dg = het.rms_norm_grad %dy, %x, %g, %rstd
        : tensor<4x16x64xf32>, tensor<4x16x64xf32>, tensor<64xf32>, tensor<4x16xf32>
       -> tensor<4x16x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$input,
      Het_FloatTensor:$scale, Het_FloatTensor:$saved_rstd);
  let results = (outs Het_FloatTensor:$grad_input, Het_FloatTensor:$grad_scale);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $scale `,` $saved_rstd attr-dict `:`
    type($grad_output) `,` type($input) `,` type($scale) `,` type($saved_rstd)
    `->` type(results)
  }];
}

//===----------------------------------------------------------------------===//
// Softmax, losses, embeddings
//===----------------------------------------------------------------------===//

def Het_SoftmaxOp : Het_ComputeOp<"softmax", [SameOperandsAndResultType, Differentiable]> {
  let summary = "softmax along one axis, optionally scaled and causally masked";
  let description = [{
    Computes `softmax(scale * x)` along `axis` (default: the last). With
    `causal`, entries `[..., i, j]` with `j > i + (K - Q)` (a key after the
    query, for `Q` queries and `K` keys in the last two dimensions) are
    excluded, as in decoder self-attention; `causal` requires the last axis.
    Scale and mask are part of the op because every attention kernel fuses
    them (Megatron's `FusedScaleMaskSoftmax`).

    ```mlir
    %p = het.softmax %s {scale = 0.125 : f64, causal} : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input,
      DefaultValuedAttr<Het_I64Attr, "-1">:$axis,
      DefaultValuedAttr<F64Attr, "1.0">:$scale, UnitAttr:$causal);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Het_SoftmaxGradOp : Het_ComputeOp<"softmax_grad", [SameOperandsAndResultType]> {
  let summary = "gradient of het.softmax from its output";
  let description = [{
    `grad_input = scale * y * (grad_output - sum(grad_output * y, axis))`
    where `y` is the softmax output. Masked entries have `y = 0` and so get
    no gradient.

    ```mlir
    %ds = het.softmax_grad %dp, %p {scale = 0.125 : f64} : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$output,
      DefaultValuedAttr<Het_I64Attr, "-1">:$axis,
      DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs Het_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $output attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Het_AttentionOp : Het_InferredComputeOp<"attention", [Differentiable]> {
  let summary = "scaled dot-product attention as one op, optionally causal";
  let description = [{
    `softmax(scale * q @ k^T) @ v` for `q` `[..., Q, D]`, `k` `[..., K, D]`
    and `v` `[..., K, E]` (equal leading dimensions); the result is
    `[..., Q, E]`. With `causal`, key `j` is visible to query `i` when
    `j <= i + (K - Q)`, as in `het.softmax {causal}`; a query that sees no
    key gets a zero row. `het-fuse-attention` forms it from `het.matmul`,
    `het.softmax` and `het.matmul`; a CPU executable runs it blocked over
    queries, so neither it nor its gradient materializes the `[..., Q, K]`
    scores or probabilities (FlashAttention's recomputation).

    ```mlir
    %o = het.attention %q, %k, %v {scale = 0.125 : f64, causal}
        : tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>
       -> tensor<2x4x16x32xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$query, Het_FloatTensor:$key, Het_FloatTensor:$value,
      DefaultValuedAttr<F64Attr, "1.0">:$scale, UnitAttr:$causal);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:` type($query) `,` type($key) `,` type($value)
    `->` type($result)
  }];
}

def Het_AttentionGradOp : Het_InferredComputeOp<"attention_grad"> {
  let summary = "gradient of het.attention, recomputing the probabilities";
  let description = [{
    With `p = softmax(scale * q @ k^T)` (masked as the forward op) recomputed
    from `q` and `k`: `grad_value = p^T @ grad_output`, `ds = scale * p *
    (grad_output @ v^T - rowsum(grad_output * output))`, `grad_query = ds @
    k` and `grad_key = ds^T @ q`. `output` is the forward result.

    ```mlir
    %dq, %dk, %dv = het.attention_grad %do, %q, %k, %v, %o {scale = 0.125 : f64, causal}
        : tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>,
          tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>
       -> tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$query,
      Het_FloatTensor:$key, Het_FloatTensor:$value, Het_FloatTensor:$output,
      DefaultValuedAttr<F64Attr, "1.0">:$scale, UnitAttr:$causal);
  let results = (outs Het_FloatTensor:$grad_query, Het_FloatTensor:$grad_key,
                      Het_FloatTensor:$grad_value);
  let assemblyFormat = [{
    $grad_output `,` $query `,` $key `,` $value `,` $output attr-dict `:`
    type($grad_output) `,` type($query) `,` type($key) `,` type($value) `,` type($output)
    `->` type(results)
  }];
}

def Het_CrossEntropyOp : Het_InferredComputeOp<"cross_entropy", [Differentiable]> {
  let summary = "mean softmax cross-entropy between logits and class labels";
  let description = [{
    `logits` is `[..., C]` and `labels` holds class indices `[...]`; the
    result is the 0-d mean over all leading positions of
    `logsumexp(logits) - logits[label]`.

    ```mlir
    %loss = het.cross_entropy %logits, %labels : tensor<64x10xf32>, tensor<64xi64> -> tensor<f32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$logits, Het_IndexTensor:$labels);
  let results = (outs 0DTensorOf<[F16, BF16, F32, F64]>:$loss);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($loss)
  }];
}

def Het_CrossEntropyGradOp : Het_InferredComputeOp<"cross_entropy_grad"> {
  let summary = "gradient of het.cross_entropy with respect to the logits";
  let description = [{
    `(softmax(logits) - onehot(labels)) * grad_loss / count`.

    ```mlir
    %dlogits = het.cross_entropy_grad %dloss, %logits, %labels
        : tensor<f32>, tensor<64x10xf32>, tensor<64xi64> -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F16, BF16, F32, F64]>:$grad_loss,
      Het_FloatTensor:$logits, Het_IndexTensor:$labels);
  let results = (outs Het_FloatTensor:$grad_logits);
  let assemblyFormat = [{
    $grad_loss `,` $logits `,` $labels attr-dict `:` type($grad_loss) `,`
    type($logits) `,` type($labels) `->` type($grad_logits)
  }];
}

def Het_EmbeddingOp : Het_InferredComputeOp<"embedding", [Differentiable]> {
  let summary = "row lookup in an embedding table";
  let description = [{
    `table` is `[V, D]`, `indices` any shape `[...]` of i32/i64; the result
    is `[..., D]`. An index outside `[0, V)` is a run-time error.

    With `vocab_shard = @group` (a `het.tensor_parallel_group` of size `n`,
    made by het-tensor-parallel) the table is member `m`'s shard of a
    vocabulary of `n * V` rows, rows `[m * V, (m + 1) * V)`: an index in it
    gives its row, any other valid index a row of zeros, and an all-reduce
    over the group assembles the full lookup.

    `padding_idx` (an index of the whole vocabulary) names a row that is
    looked up as usual but gets no gradient (PyTorch's
    `nn.Embedding(padding_idx=...)`).

    ```mlir
    %e = het.embedding %table, %tokens : tensor<512x64xf32>, tensor<4x16xi64> -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$table, Het_IndexTensor:$indices,
                       OptionalAttr<FlatSymbolRefAttr>:$vocab_shard,
                       OptionalAttr<Het_I64Attr>:$padding_idx);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` type($table) `,` type($indices) `->` type($result)
  }];
}

def Het_EmbeddingGradOp : Het_ComputeOp<"embedding_grad"> {
  let summary = "gradient of het.embedding with respect to its table";
  let description = [{
    Scatter-adds each row of `grad_output` into the table row its index
    names; the table's row count comes from the result type. With
    `vocab_shard`, as for `het.embedding`, only the indices of this member's
    rows contribute; indices equal to `padding_idx` contribute nothing.

    ```mlir
    %dtable = het.embedding_grad %de, %tokens : tensor<4x16x64xf32>, tensor<4x16xi64> -> tensor<512x64xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_IndexTensor:$indices,
                       OptionalAttr<FlatSymbolRefAttr>:$vocab_shard,
                       OptionalAttr<Het_I64Attr>:$padding_idx);
  let results = (outs Het_FloatTensor:$grad_table);
  let assemblyFormat = [{
    $grad_output `,` $indices attr-dict `:` type($grad_output) `,` type($indices)
    `->` type($grad_table)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Activation gradients
//===----------------------------------------------------------------------===//

def Het_ReluGradOp : Het_ComputeOp<"relu_grad", [SameOperandsAndResultType]> {
  let summary = "gradient of het.relu: grad_output where input > 0, else 0";
  let description = [{
    ```mlir
    %dx = het.relu_grad %dy, %x : tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$input);
  let results = (outs Het_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($input)";
}

def Het_GeluGradOp : Het_ComputeOp<"gelu_grad", [SameOperandsAndResultType]> {
  let summary = "gradient of het.gelu";
  let description = [{
    ```mlir
    %dx = het.gelu_grad %dy, %x : tensor<4x16x256xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, Het_FloatTensor:$input,
      DefaultValuedAttr<Het_GeluApproximationAttr,
                        "::mlir::het::GeluApproximation::None">:$approximate);
  let results = (outs Het_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Reductions and layout
//===----------------------------------------------------------------------===//

class Het_ReduceOp<string mnemonic> : Het_InferredComputeOp<mnemonic, [Differentiable]> {
  let arguments = (ins Het_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keep_dims);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Het_ReduceSumOp : Het_ReduceOp<"reduce_sum"> {
  let summary = "sum over the given axes";
  let description = [{
    Axes must be distinct and in range (negative counts from the end).

    ```mlir
    %db = het.reduce_sum %dy {axes = array<i64: 0, 2, 3>} : tensor<8x16x32x32xf32> -> tensor<16xf32>
    ```
  }];
}

def Het_ReduceMeanOp : Het_ReduceOp<"reduce_mean"> {
  let summary = "mean over the given axes";
  let description = [{
    ```mlir
    %m = het.reduce_mean %x {axes = array<i64: 1>, keep_dims} : tensor<4x16x64xf32> -> tensor<4x1x64xf32>
    ```
  }];
}

def Het_ReduceMaxOp : Het_ReduceOp<"reduce_max"> {
  let summary = "maximum over the given axes";
  let description = [{
    PyTorch's amax: the gradient goes to the elements equal to the maximum,
    shared evenly among ties.

    ```mlir
    %m = het.reduce_max %x {axes = array<i64: -1>, keep_dims} : tensor<4x16x64xf32> -> tensor<4x16x1xf32>
    ```
  }];
}

def Het_SumToShapeOp : Het_ComputeOp<"sum_to_shape", [Differentiable]> {
  let summary = "sum away the dimensions that broadcasting added";
  let description = [{
    The inverse of NumPy broadcasting, used by the gradient of `het.add`:
    the result type must broadcast to the input type, and every dimension
    that was stretched is summed.

    ```mlir
    %db = het.sum_to_shape %dy : tensor<64x128xf32> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Het_BroadcastToOp : Het_ComputeOp<"broadcast_to", [Differentiable]> {
  let summary = "stretch a tensor to a larger shape by NumPy broadcasting";
  let description = [{
    The inverse of `het.sum_to_shape` and the gradient of reductions: the
    input type must broadcast to the result type.

    ```mlir
    %y = het.broadcast_to %x : tensor<16xf32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Het_CastOp : Het_ComputeOp<"cast", [Differentiable]> {
  let summary = "the same values in another floating-point format";
  let description = [{
    Converts each element to the result's element type, rounding to nearest
    (ties to even) where the result has fewer bits, exactly where it has
    more. Mixed precision is written with it: `het-autocast` casts the
    operands of the ops it runs in bf16 or f16, and the f32 master weights
    (parameters stay f32; their casts are the low copies).

    ```mlir
    %w16 = het.cast %w : tensor<64x128xf32> -> tensor<64x128xbf16>
    ```
    Its gradient casts the incoming gradient back to the input's format, so
    a parameter's gradient arrives in f32. A cast to the same type folds
    away; a cast of a widening cast casts the original value directly.
  }];
  let arguments = (ins Het_FloatTensor:$input);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Het_ReshapeOp : Het_ComputeOp<"reshape", [Differentiable]> {
  let summary = "same elements, new shape (row-major order)";
  let description = [{
    ```mlir
    %y = het.reshape %x : tensor<4x16x64xf32> -> tensor<4x16x4x16xf32>
    ```
    A reshape to the same type folds away; two reshapes in a row become one.
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Het_TransposeOp : Het_InferredComputeOp<"transpose", [Differentiable]> {
  let summary = "permute dimensions";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`.

    ```mlir
    %y = het.transpose %x {permutation = array<i64: 0, 2, 1, 3>}
        : tensor<4x16x4x16xf32> -> tensor<4x4x16x16xf32>
    ```
    The identity permutation folds away; two transposes compose into one.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def Het_UnscaleGradientsOp : Het_ComputeOp<"unscale_gradients",
    [AllTypesMatch<["gradients", "unscaled"]>]> {
  let summary = "loss scaling: gradients divided by the scale, and whether any is inf or NaN";
  let description = [{
    The unscaling half of `torch.amp.GradScaler`'s step: each gradient of
    the scaled loss is multiplied by `1 / scale` (the reciprocal taken in
    f64 and rounded to f32, as PyTorch takes it), and `found_inf` is 1.0 if
    any of their elements is infinite or NaN, else 0.0. `het-autodiff`
    (`loss-scale`) emits it before the optimizer updates, which then keep
    the old values where `found_inf` is set (`het.select`).

    ```mlir
    %inf, %g1, %g2 = het.unscale_gradients %scale, %dw, %db
        : tensor<f32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<f32>, tensor<64x32xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$scale, Variadic<Het_FloatTensor>:$gradients);
  let results = (outs 0DTensorOf<[F32]>:$found_inf, Variadic<Het_FloatTensor>:$unscaled);
  let assemblyFormat = [{
    $scale (`,` $gradients^)? attr-dict `:` type($scale) (`,` type($gradients)^)? `->`
    type($found_inf) (`,` type($unscaled)^)?
  }];
}

def Het_SquaredNormOp : Het_ComputeOp<"squared_norm"> {
  let summary = "gradient clipping: the sum of the squares of every element of the tensors";
  let description = [{
    The square of the global 2-norm `torch.nn.utils.clip_grad_norm_`
    takes over a model's gradients (each tensor's squares summed in f32,
    the sums added), multiplied by `weight`. `het-autodiff`
    (`clip-grad-norm`) emits it over every parameter's gradient;
    `het-partition` splits it by stage, and the job adds the stages'
    sums with one all-reduce, each replica of a stage of R replicas
    counting `weight = 1/R` of its (replicated) gradients' sum.

    ```mlir
    %sq = het.squared_norm %dw, %db : tensor<64x32xf32>, tensor<64xf32> -> tensor<f32>
    %part = het.squared_norm %dw : tensor<64x32xf32> {weight = 5.0e-01 : f64} -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Het_FloatTensor>:$tensors,
                       DefaultValuedAttr<F64Attr, "1.0">:$weight);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    ($tensors^ `:` type($tensors))? attr-dict `->` type($result)
  }];
}

def Het_ClipByNormOp : Het_ComputeOp<"clip_by_norm",
    [AllTypesMatch<["gradients", "clipped"]>]> {
  let summary = "gradient clipping: gradients scaled so that their global norm is at most max_norm";
  let description = [{
    `torch.nn.utils.clip_grad_norm_`'s scaling, given the squared global
    norm (`het.squared_norm`, summed over the job): every gradient is
    multiplied by `min(1, max_norm / (sqrt(squared_norm) + 1e-6))`,
    computed in f32 as PyTorch computes it.

    ```mlir
    %g1, %g2 = het.clip_by_norm %sq, %dw, %db {max_norm = 1.0 : f64}
        : tensor<f32>, tensor<64x32xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$squared_norm, Variadic<Het_FloatTensor>:$gradients,
                       F64Attr:$max_norm);
  let results = (outs Variadic<Het_FloatTensor>:$clipped);
  let assemblyFormat = [{
    $squared_norm (`,` $gradients^)? attr-dict `:` type($squared_norm) (`,` type($gradients)^)?
  }];
  let hasVerifier = 1;
}

def Het_SelectOp : Het_ComputeOp<"select",
    [AllTypesMatch<["on_true", "on_false", "result"]>]> {
  let summary = "one of two tensors, by a 0-d predicate";
  let description = [{
    `on_true` where `predicate` (a 0-d f32) is not 0, else `on_false`:
    with loss scaling, a step whose gradients overflowed keeps every
    parameter and optimizer state as it was.

    ```mlir
    %w1 = het.select %found_inf, %w, %w_updated : tensor<f32>, tensor<64x32xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$predicate, AnyRankedTensor:$on_true,
                       AnyRankedTensor:$on_false);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $on_true `,` $on_false attr-dict `:` type($predicate) `,` type($result)
  }];
}

def Het_LossScaleUpdateOp : Het_ComputeOp<"loss_scale_update"> {
  let summary = "dynamic loss scaling: the next scale, as torch.amp.GradScaler.update";
  let description = [{
    The scale is `init_scale * ratio`. After a step with `found_inf` the
    ratio is multiplied by `backoff_factor` and the count of good steps
    restarts at 0; after `growth_interval` good steps in a row it is
    multiplied by `growth_factor` (unless that makes the scale infinite)
    and the count restarts (PyTorch's `_amp_update_scale_`). The ratio
    starts at 1 and the count at 0, so both are state a new job
    initializes without knowing the scale.

    ```mlir
    %ratio1, %count1 = het.loss_scale_update %inf, %ratio, %count
        {init_scale = 65536.0 : f64, growth_interval = 2000 : i64}
        : tensor<f32>, tensor<f32>, tensor<f32> -> tensor<f32>, tensor<f32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$found_inf, 0DTensorOf<[F32]>:$ratio,
      0DTensorOf<[F32]>:$growth_tracker, F64Attr:$init_scale,
      DefaultValuedAttr<F64Attr, "2.0">:$growth_factor,
      DefaultValuedAttr<F64Attr, "0.5">:$backoff_factor,
      DefaultValuedAttr<Het_I64Attr, "2000">:$growth_interval);
  let results = (outs 0DTensorOf<[F32]>:$new_ratio, 0DTensorOf<[F32]>:$new_growth_tracker);
  let assemblyFormat = [{
    $found_inf `,` $ratio `,` $growth_tracker attr-dict `:` type($found_inf) `,` type($ratio)
    `,` type($growth_tracker) `->` type($new_ratio) `,` type($new_growth_tracker)
  }];
  let hasVerifier = 1;
}

def Het_SGDOp : Het_ComputeOp<"sgd", [AllTypesMatch<["param", "grad",
    "momentum_buffer", "new_param", "new_momentum_buffer"]>]> {
  let summary = "stochastic gradient descent step with momentum";
  let description = [{
    PyTorch's `torch.optim.SGD` rule, without dampening:
    `g' = grad + weight_decay * param`,
    `buf' = momentum * buf + g'`,
    `param' = param - lr * (nesterov ? g' + momentum * buf' : buf')`.
    With `momentum = 0` the buffer passes through unchanged.

    ```mlir
    %w1, %buf1 = het.sgd %w, %dw, %buf {lr = 0.1 : f64, momentum = 0.9 : f64}
        : tensor<256x784xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$param, Het_FloatTensor:$grad,
      Het_FloatTensor:$momentum_buffer, F64Attr:$lr,
      DefaultValuedAttr<F64Attr, "0.0">:$momentum,
      DefaultValuedAttr<F64Attr, "0.0">:$weight_decay, UnitAttr:$nesterov);
  let results = (outs Het_FloatTensor:$new_param,
                      Het_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

def Het_AdamOp : Het_ComputeOp<"adam", [AllTypesMatch<["param", "grad",
    "exp_avg", "exp_avg_sq", "new_param", "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "Adam / AdamW step";
  let description = [{
    PyTorch's `torch.optim.Adam` rule (or `AdamW` with `decoupled`), with the
    bias correction of step `step` (1-based, a 0-d integer tensor so one
    compiled step function serves every iteration).

    ```mlir
    %w1, %m1, %v1 = het.adam %w, %dw, %m, %v, %step {lr = 1.0e-3 : f64}
        : tensor<64x64xf32>, tensor<i64>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$param, Het_FloatTensor:$grad,
      Het_FloatTensor:$exp_avg, Het_FloatTensor:$exp_avg_sq,
      Het_StepTensor:$step, F64Attr:$lr,
      DefaultValuedAttr<F64Attr, "0.9">:$beta1,
      DefaultValuedAttr<F64Attr, "0.999">:$beta2,
      DefaultValuedAttr<F64Attr, "1.0e-8">:$epsilon,
      DefaultValuedAttr<F64Attr, "0.0">:$weight_decay, UnitAttr:$decoupled);
  let results = (outs Het_FloatTensor:$new_param, Het_FloatTensor:$new_exp_avg,
                      Het_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step attr-dict `:`
    type($param) `,` type($step)
  }];
  let hasVerifier = 1;
}

#endif // HET_DIALECT_HET_IR_HETCOMPUTEOPS_TD
