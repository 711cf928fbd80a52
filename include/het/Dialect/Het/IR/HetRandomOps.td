//===- HetRandomOps.td - ops drawing random numbers ---------*- tablegen -*-===//
//
// Randomness in het is counter-based (Philox 4x32-10): a random number is a
// pure function of a key (the op's `seed` and `stream`) and a counter (the
// training step and the element's index in the step's whole batch), so a
// result is the same whatever the partition into stages, replicas and
// micro-batches, and after a restart from a checkpoint, and needs no state
// to carry between steps or devices.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_IR_HETRANDOMOPS_TD
#define HET_DIALECT_HET_IR_HETRANDOMOPS_TD

include "het/Dialect/Het/IR/HetComputeOps.td"

def Het_DropoutOp : Het_ComputeOp<"dropout", [SameOperandsAndResultType, Differentiable]> {
  let summary = "zero elements with probability p, scale the rest by 1/(1-p)";
  let description = [{
    Element `i` of the input (row-major; dimension 0 is the batch) is kept
    when `u >= p`, where `u` is the top 24 bits of the first word of
    Philox4x32-10 with key `(seed, stream)` and counter `(g, step)`, as a
    number in [0, 1): `g` is the element's index in the training step's
    whole batch (`first_sample * elements_per_sample + i`) and `step` the
    training step. The runtime that runs the op supplies the step and the
    index of the first sample it holds (het-eval: its step loop and 0; a
    pipeline rank: the step and its micro-batch's and replica's first
    sample). Kept elements are scaled by `1/(1-p)` (PyTorch's
    `F.dropout` in training mode). `stream` tells the dropout sites of a
    model apart. The gradient is the same op on the result gradient: the
    same mask and scale.

    ```mlir
    %y = het.dropout %x {p = 0.1 : f64, seed = 0 : i64, stream = 3 : i64} : tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins Het_FloatTensor:$input, F64Attr:$p, Het_I64Attr:$seed,
                       Het_I64Attr:$stream);
  let results = (outs Het_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

#endif // HET_DIALECT_HET_IR_HETRANDOMOPS_TD
