//===- HetStructure.cpp - cluster, stage and point-to-point checks --------===//
//
// Verifiers for the placement ops. Anything that needs another op (a symbol)
// is checked in verifySymbolUses, which MLIR runs once per symbol table with a
// shared lookup cache, never in verify().
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::het;

//===----------------------------------------------------------------------===//
// ClusterOp
//===----------------------------------------------------------------------===//

LogicalResult ClusterOp::verifyRegions() {
  bool hasGroup = false;
  llvm::DenseSet<std::pair<StringAttr, StringAttr>> links;
  for (Operation &op : getBodyBlock()) {
    if (isa<DeviceGroupOp>(op)) {
      hasGroup = true;
      continue;
    }
    if (auto link = dyn_cast<LinkOp>(op)) {
      StringAttr a = link.getLhsAttr().getAttr(), b = link.getRhsAttr().getAttr();
      if (b.getValue() < a.getValue())
        std::swap(a, b);
      if (!links.insert({a, b}).second)
        return link.emitOpError("duplicates the link between @")
               << a.getValue() << " and @" << b.getValue()
               << " (links are bidirectional)";
      continue;
    }
    return op.emitOpError("cannot appear in a het.cluster, which holds only "
                          "het.device_group and het.link");
  }
  if (!hasGroup)
    return emitOpError("must contain at least one het.device_group");
  return success();
}

//===----------------------------------------------------------------------===//
// DeviceGroupOp
//===----------------------------------------------------------------------===//

LogicalResult DeviceGroupOp::verify() {
  if (getCount() < 1)
    return emitOpError("'count' must be >= 1, got ") << getCount();
  double memory = getMemoryGib().convertToDouble();
  if (!(memory > 0.0) || !std::isfinite(memory))
    return emitOpError("'memory_gib' must be positive, got ") << memory;
  if (getNodes() < 1)
    return emitOpError("'nodes' must be >= 1, got ") << getNodes();
  if (getCount() % getNodes() != 0)
    return emitOpError("'count' (") << getCount()
           << ") must divide evenly over 'nodes' (" << getNodes() << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// LinkOp
//===----------------------------------------------------------------------===//

LogicalResult LinkOp::verify() {
  double bandwidth = getBandwidthGbps().convertToDouble();
  double latency = getLatencyUs().convertToDouble();
  if (!(bandwidth > 0.0) || !std::isfinite(bandwidth))
    return emitOpError("'bandwidth_gbps' must be positive, got ") << bandwidth;
  if (!(latency >= 0.0) || !std::isfinite(latency))
    return emitOpError("'latency_us' must be non-negative, got ") << latency;
  return success();
}

LogicalResult LinkOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto cluster = (*this)->getParentOfType<ClusterOp>();
  for (FlatSymbolRefAttr end : {getLhsAttr(), getRhsAttr()})
    if (!symbolTable.lookupSymbolIn<DeviceGroupOp>(cluster, end.getAttr()))
      return emitOpError("names ") << end
             << ", which is not a het.device_group of cluster @"
             << cluster.getSymName();
  return success();
}

//===----------------------------------------------------------------------===//
// StageOp
//===----------------------------------------------------------------------===//

LogicalResult StageOp::verify() {
  SmallVector<ReplicaGroupAttr> groups = getReplicaGroupList();
  if (groups.empty())
    return emitOpError("needs at least one replica group");
  size_t withShare = llvm::count_if(groups, [](ReplicaGroupAttr g) { return g.getSamples() > 0; });
  if (withShare != 0 && withShare != groups.size())
    return emitOpError("gives a share of the micro-batch ('samples') to some replica groups "
                       "but not to others; give all or none");
  // With expert parallelism every replica is a group of its own (each
  // holds other experts), so a device group may repeat.
  auto experts = (*this)->getAttrOfType<DenseI64ArrayAttr>(kReplicaExpertsAttrName);
  if (experts && (experts.size() != int64_t(groups.size()) ||
                  llvm::any_of(groups, [](ReplicaGroupAttr g) { return g.getReplicas() != 1; })))
    return emitOpError("'") << kReplicaExpertsAttrName
                            << "' needs one replica per group and a count of experts for each";
  for (size_t i = 0; i < groups.size() && !experts; ++i)
    for (size_t j = 0; j < i; ++j)
      if (groups[i].getGroup() == groups[j].getGroup() &&
          groups[i].getSamples() == groups[j].getSamples())
        return emitOpError("lists replica group ")
               << groups[i].getGroup() << " twice with the same share; merge them";
  if (getTensorParallel() < 1)
    return emitOpError("'tensor_parallel' must be >= 1, got ") << getTensorParallel();
  if (getLayerBegin() < 0 || getLayerEnd() <= getLayerBegin())
    return emitOpError("layer range [")
           << getLayerBegin() << ", " << getLayerEnd()
           << ") must be non-empty and start at >= 0";
  return success();
}

LogicalResult StageOp::verifyRegions() {
  int64_t begin = getLayerBegin(), end = getLayerEnd();
  WalkResult result = getBody().walk([&](Operation *op) {
    auto layer = op->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName());
    if (!layer)
      return WalkResult::advance();
    if (layer.getInt() < begin || layer.getInt() >= end) {
      op->emitOpError("belongs to layer ")
          << layer.getInt() << ", outside the layer range [" << begin << ", "
          << end << ") of stage @" << getSymName();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult StageOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  int64_t tp = getTensorParallel();
  for (ReplicaGroupAttr replicas : getReplicaGroupList()) {
    Operation *target = symbolTable.lookupNearestSymbolFrom(*this, replicas.getGroup());
    auto group = dyn_cast_or_null<DeviceGroupOp>(target);
    if (!group)
      return emitOpError("is placed on ")
             << replicas.getGroup()
             << ", which is not a het.device_group (expected @cluster::@group)";
    if (replicas.getReplicas() * tp > group.getCount())
      return emitOpError("has ") << replicas.getReplicas() << " replicas"
                                 << (tp > 1 ? " of " + std::to_string(tp) + " devices" : "")
                                 << " on device group " << replicas.getGroup() << ", which has only "
                                 << group.getCount() << " devices";
    if (tp > 1 && (group.getCount() / group.getNodes()) % tp != 0)
      return emitOpError("splits each replica over ")
             << tp << " devices, which does not divide the "
             << group.getCount() / group.getNodes() << " devices per node of "
             << replicas.getGroup() << " (tensor parallelism stays inside a node)";
  }
  // Across the module's stages: the shares describe one micro-batch, and no
  // device group gives out more devices than it has.
  Operation *parent = (*this)->getParentOp();
  if (!parent)
    return success();
  int64_t samples = getMicroBatchSamples();
  for (auto other : parent->getRegion(0).getOps<StageOp>()) {
    if (other == *this)
      break; // each pair is checked once, by the later stage
    int64_t theirs = other.getMicroBatchSamples();
    if (samples > 0 && theirs > 0 && samples != theirs)
      return emitOpError("shares add up to ")
             << samples << " samples per micro-batch, but those of stage @"
             << other.getSymName() << " add up to " << theirs;
  }
  // Devices of each group used by the stages before this one and by it:
  // the stage that takes a group past its count reports it.
  llvm::DenseMap<Operation *, int64_t> used;
  for (auto stage : parent->getRegion(0).getOps<StageOp>()) {
    for (ReplicaGroupAttr replicas : stage.getReplicaGroupList())
      if (Operation *group = symbolTable.lookupNearestSymbolFrom(stage, replicas.getGroup()))
        used[group] += replicas.getReplicas() * stage.getTensorParallel();
    if (stage == *this)
      break;
  }
  for (ReplicaGroupAttr replicas : getReplicaGroupList()) {
    auto group = cast<DeviceGroupOp>(symbolTable.lookupNearestSymbolFrom(*this, replicas.getGroup()));
    if (used[group] > group.getCount())
      return emitOpError("and the stages before it use ")
             << used[group] << " devices of " << replicas.getGroup() << ", which has only "
             << group.getCount();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// TensorParallelGroupOp
//===----------------------------------------------------------------------===//

LogicalResult TensorParallelGroupOp::verify() {
  if (getSize() < 1)
    return emitOpError("'size' must be >= 1, got ") << getSize();
  return success();
}

LogicalResult TiedGroupOp::verify() {
  if (getStages().size() < 2)
    return emitOpError("ties at least two stages, got ") << getStages().size();
  return success();
}

//===----------------------------------------------------------------------===//
// SendOp / RecvOp
//===----------------------------------------------------------------------===//

/// Both ends of a point-to-point op must sit in a stage and name another one.
static LogicalResult verifyPeer(Operation *op, FlatSymbolRefAttr peer,
                                int64_t channel,
                                SymbolTableCollection *symbolTable) {
  auto stage = op->getParentOfType<StageOp>();
  if (!stage)
    return op->emitOpError("must be inside a het.stage");
  if (channel < 0)
    return op->emitOpError("'channel' must be >= 0, got ") << channel;
  if (!symbolTable)
    return success();
  if (peer.getValue() == stage.getSymName())
    return op->emitOpError("names its own stage ") << peer
           << "; send/recv connect two different stages";
  if (!symbolTable->lookupNearestSymbolFrom<StageOp>(stage, peer.getAttr()))
    return op->emitOpError("names ") << peer << ", which is not a het.stage";
  return success();
}

LogicalResult SendOp::verify() {
  return verifyPeer(*this, getTargetAttr(), getChannel(), nullptr);
}
LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyPeer(*this, getTargetAttr(), getChannel(), &symbolTable);
}
LogicalResult RecvOp::verify() {
  return verifyPeer(*this, getSourceAttr(), getChannel(), nullptr);
}
LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyPeer(*this, getSourceAttr(), getChannel(), &symbolTable);
}
