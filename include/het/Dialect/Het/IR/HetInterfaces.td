//===- HetInterfaces.td - op interfaces of het -------------*- tablegen -*-===//

#ifndef HET_DIALECT_HET_IR_HETINTERFACES_TD
#define HET_DIALECT_HET_IR_HETINTERFACES_TD

include "mlir/IR/OpBase.td"

def Het_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::mlir::het";
  let description = [{
    A collective over the replicas of a stage or the devices of a group.
    Passes that only care about "some collective" (cost model, insertion,
    lowering to hetccl) use this interface instead of a list of ops.
  }];
  let methods = [
    InterfaceMethod<"The tensor this rank contributes.", "::mlir::Value",
                    "getInput">,
    InterfaceMethod<"The stage or device group whose members take part.",
                    "::mlir::SymbolRefAttr", "getGroup">,
    InterfaceMethod<[{Number of participants: the replica count of the stage
                      or the device count of the group; failure when the
                      symbol does not resolve.}],
                    "::mlir::FailureOr<int64_t>", "getGroupSize",
                    (ins "::mlir::SymbolTableCollection &":$symbolTable),
                    [{}], [{
      return ::mlir::het::resolveGroupSize($_op, $_op.getGroup(), symbolTable);
    }]>
  ];
}

def Het_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::het";
  let description = [{
    An op that knows its own reverse-mode gradient rule. `het-autodiff` walks
    a function backwards and asks each op on the path from a parameter to
    the loss for the gradients of its operands, given the gradients of its
    results. The rule lives with the op (HetGradients.cpp), not in a switch
    inside the pass, so a new op brings its rule with it.
  }];
  let methods = [
    InterfaceMethod<[{
      Builds, at the builder's insertion point, the gradients of this op's
      operands from `resultGradients` (one entry per result; a null Value
      means no gradient flows into that result). Fills `operandGradients`
      with one entry per operand, null where the operand has no gradient
      (integer operands such as labels, or results nothing depends on).
      Fails with a diagnostic on this op when the rule does not apply.
    }], "::mlir::LogicalResult", "buildGradients",
    (ins "::mlir::OpBuilder &":$builder,
         "::mlir::ArrayRef<::mlir::Value>":$resultGradients,
         "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGradients)>
  ];
}

#endif // HET_DIALECT_HET_IR_HETINTERFACES_TD
