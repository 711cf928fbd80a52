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

#endif // HET_DIALECT_HET_IR_HETINTERFACES_TD
