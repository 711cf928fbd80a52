//===- HetMoEExchange.cpp - the all-to-all of expert parallelism ----------===//
//
// het.moe_to_experts and het.moe_from_experts move a mixture-of-experts
// layer's rows between the replicas of a stage that hold different experts
// (het-expert-parallel). They are each other's transposes for a fixed
// routing, so each one's gradient is the other.
//
//===----------------------------------------------------------------------===//

#include "ShapeRules.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <numeric>

using namespace mlir;
using namespace mlir::het;
using namespace mlir::het::shapes;

namespace {

/// The checks both directions share: `buffer` is the member's dispatch
/// buffer [E, C, X], `expertRows` its experts' rows [E_m, R, X].
LogicalResult verifyExchange(Operation *op, ArrayRef<int64_t> experts, Value buffer,
                             Value expertRows, Value indices) {
  ArrayRef<int64_t> whole = shapeOf(buffer), mine = shapeOf(expertRows);
  if (whole.size() != 3 || mine.size() != 3)
    return op->emitOpError("needs a dispatch buffer [E, C, X] and expert rows [E_m, R, X], got ")
           << shapeString(whole) << " and " << shapeString(mine);
  if (shapeOf(indices).size() != 2)
    return op->emitOpError("indices must be 2-D [T, k], got ") << shapeString(shapeOf(indices));
  if (experts.empty() || llvm::any_of(experts, [](int64_t n) { return n < 1; }))
    return op->emitOpError("experts must give each member at least one expert");
  int64_t total = std::accumulate(experts.begin(), experts.end(), int64_t(0));
  if (whole[0] != kDynamic && total != whole[0])
    return op->emitOpError("experts hold ")
           << total << " experts in all; the dispatch buffer has " << whole[0];
  if (mine[0] != kDynamic && !llvm::is_contained(experts, mine[0]))
    return op->emitOpError("holds ") << mine[0] << " experts here, which no member's count ("
                                     << experts << ") is";
  if (!compatible(whole[2], mine[2]))
    return op->emitOpError("moves rows of ")
           << whole[2] << " features into rows of " << mine[2];
  if (whole[1] != kDynamic && mine[1] != kDynamic && mine[1] < whole[1])
    return op->emitOpError("gives its experts ")
           << mine[1] << " rows, fewer than this member's capacity " << whole[1];
  if (elementOf(buffer) != elementOf(expertRows))
    return op->emitOpError("moves ") << elementOf(buffer) << " rows into " << elementOf(expertRows);
  return success();
}

/// The group is a stage with one replica per entry of `experts`; before
/// het-partition (no het.cluster yet) the forward model names a stage to be.
LogicalResult verifyExchangeGroup(Operation *op, SymbolRefAttr group, ArrayRef<int64_t> experts,
                                  SymbolTableCollection &symbolTable) {
  Operation *target = symbolTable.lookupNearestSymbolFrom(op, group);
  if (!target) {
    auto module = op->getParentOfType<ModuleOp>();
    if (module && module.getOps<ClusterOp>().empty())
      return success();
    return op->emitOpError("names unknown stage ") << group;
  }
  auto stage = dyn_cast<StageOp>(target);
  if (!stage)
    return op->emitOpError("exchanges rows over ") << group << ", which is not a het.stage";
  if (stage.getReplicas() != static_cast<int64_t>(experts.size()))
    return op->emitOpError("gives experts to ")
           << experts.size() << " members, but stage " << group << " has "
           << stage.getReplicas() << " replicas";
  return success();
}

} // namespace

LogicalResult MoEToExpertsOp::verify() {
  if (failed(verifyExchange(*this, getExperts(), getRows(), getExpertRows(), getIndices())))
    return failure();
  ArrayRef<int64_t> counts = shapeOf(getCounts());
  if (counts.size() != 1 || !compatible(counts[0], shapeOf(getExpertRows())[0]))
    return emitOpError("counts must be [E_m] = [")
           << shapeOf(getExpertRows())[0] << "], got " << shapeString(counts);
  return success();
}

LogicalResult MoEFromExpertsOp::verify() {
  return verifyExchange(*this, getExperts(), getRows(), getExpertRows(), getIndices());
}

LogicalResult MoEToExpertsOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyExchangeGroup(*this, getGroupAttr(), getExperts(), symbolTable);
}

LogicalResult MoEFromExpertsOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyExchangeGroup(*this, getGroupAttr(), getExperts(), symbolTable);
}

LogicalResult MoEToExpertsOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                             SmallVectorImpl<Value> &dxs) {
  // Only the rows carry a gradient; the counts are integers.
  dxs.push_back(dys[0] ? b.create<MoEFromExpertsOp>(getLoc(), getRows().getType(), dys[0],
                                                    getIndices(), getGroupAttr(), getExpertsAttr())
                             .getResult()
                       : Value());
  dxs.push_back(Value()); // expert choices are integers
  return success();
}

LogicalResult MoEFromExpertsOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                               SmallVectorImpl<Value> &dxs) {
  auto counts = RankedTensorType::get({shapeOf(getExpertRows())[0]}, b.getI64Type());
  dxs.push_back(b.create<MoEToExpertsOp>(getLoc(), getExpertRows().getType(), counts, dys[0],
                                         getIndices(), getGroupAttr(), getExpertsAttr())
                    .getExpertRows());
  dxs.push_back(Value()); // expert choices are integers
  return success();
}
