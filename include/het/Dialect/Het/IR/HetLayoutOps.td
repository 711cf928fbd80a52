//===- HetLayoutOps.td - concatenation and slicing ----------*- tablegen -*-===//
//
// Ops that move elements without computing on them, beyond reshape and
// transpose: what PyTorch models do with torch.cat / stack / split / chunk /
// narrow / select / indexing by ranges (rotary embeddings, DenseNet's
// feature concatenation, grouped-query attention's head layout).
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_IR_HETLAYOUTOPS_TD
#define HET_DIALECT_HET_IR_HETLAYOUTOPS_TD

include "het/Dialect/Het/IR/HetComputeOps.td"

def Het_ConcatOp : Het_InferredComputeOp<"concat", [Differentiable]> {
  let summary = "join tensors along one axis";
  let description = [{
    The inputs have the same rank, element type and sizes except along
    `axis` (negative counts from the end); the result's size along `axis`
    is the sum of theirs. The gradient slices the result gradient back.

    ```mlir
    %y = het.concat %a, %b {axis = 1 : i64}
        : (tensor<8x16x4x4xf32>, tensor<8x32x4x4xf32>) -> tensor<8x48x4x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Het_FloatTensor>:$inputs, Het_I64Attr:$axis);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasFolder = 1;
}

def Het_SliceOp : Het_InferredComputeOp<"slice", [Differentiable]> {
  let summary = "a strided range along some axes";
  let description = [{
    Along each axis in `axes` (distinct, in range, negative from the end)
    keeps indices `starts[i], starts[i] + steps[i], ...` below `ends[i]`,
    with `0 <= start <= end <= size` and `step >= 1`; the other axes stay
    whole, so a slice of a feature axis keeps following the batch size when
    a stage is specialised to its share. PyTorch's slice, narrow, split,
    chunk and (with a reshape) select become this op.

    ```mlir
    %half = het.slice %x {axes = array<i64: 3>, starts = array<i64: 0>,
                          ends = array<i64: 8>, steps = array<i64: 1>}
        : tensor<2x4x16x16xf32> -> tensor<2x4x16x8xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$ends,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Het_SliceGradOp : Het_InferredComputeOp<"slice_grad", [Differentiable]> {
  let summary = "gradient of het.slice: the slice placed in zeros";
  let description = [{
    A tensor of zeros shaped like the slice's input (`sizes` gives its size
    along each sliced axis; the other axes follow `grad_output`) with
    `grad_output` written at the positions the slice read.

    ```mlir
    %dx = het.slice_grad %dy {axes = array<i64: 3>, starts = array<i64: 0>,
                              steps = array<i64: 1>, sizes = array<i64: 16>}
        : tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$grad_output, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$steps,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Het_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output attr-dict `:` type($grad_output) `->` type($grad_input)";
}

#endif // HET_DIALECT_HET_IR_HETLAYOUTOPS_TD
