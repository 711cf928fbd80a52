//===- TiedParameters.cpp - one parameter read by several stages ----------===//
//
// See TiedParameters.h. The rewrite happens on the step before it is cut,
// so het-partition's cutting sees ordinary ops: each stage's partial sum
// is layered in that stage, and each copy of the update reads its stage's
// copy of the parameter and state (the same step arguments, which every
// stage reading them receives as its own).
//
//===----------------------------------------------------------------------===//
#include "TiedParameters.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <functional>

using namespace mlir;
using namespace mlir::het;

namespace het::partition {

int TiedParameters::tieOfGradient(Value source) const {
  if (auto it = tieOfPartial.find(source); it != tieOfPartial.end())
    return static_cast<int>(it->second);
  // An unscaled gradient (loss scaling): result n >= 1 of the unscaling is
  // its gradient n - 1.
  if (auto unscale = source.getDefiningOp<UnscaleGradientsOp>()) {
    unsigned n = cast<OpResult>(source).getResultNumber();
    if (n >= 1)
      return tieOfGradient(unscale.getGradients()[n - 1]);
  }
  return -1;
}

namespace {

int64_t layerOf(Operation *op) {
  if (auto a = op->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName()))
    return a.getInt();
  return -1;
}

/// The gradient an update reads before gradient clipping and unscaling.
Value rawGradient(Value gradient) {
  if (auto clip = gradient.getDefiningOp<ClipByNormOp>())
    gradient = clip.getGradients()[cast<OpResult>(gradient).getResultNumber()];
  if (auto unscale = gradient.getDefiningOp<UnscaleGradientsOp>()) {
    unsigned n = cast<OpResult>(gradient).getResultNumber();
    if (n >= 1)
      gradient = unscale.getGradients()[n - 1];
  }
  return gradient;
}

} // namespace

FailureOr<TiedParameters> tieParameters(func::FuncOp step, const PartitionPlan &plan,
                                        std::map<Operation *, int> &stageOf, bool lossWeighted,
                                        const std::set<std::string> &tensorParallelSplit) {
  TiedParameters out;
  Block &body = step.getBody().front();
  auto returned = cast<func::ReturnOp>(body.getTerminator());
  for (BlockArgument arg : step.getArguments()) {
    if (!step.getArgAttr(arg.getArgNumber(), HetDialect::getParamAttrName()))
      continue;
    std::set<int> readers;
    SmallVector<Operation *> updates;
    for (Operation *user : arg.getUsers()) {
      if (isa<SGDOp, AdamOp>(user) && user->getOperand(0) == arg) {
        updates.push_back(user);
        continue;
      }
      if (auto it = stageOf.find(user); it != stageOf.end())
        readers.insert(it->second);
    }
    if (readers.size() < 2)
      continue;
    const std::string name = argumentName(step, arg.getArgNumber());
    std::string stageList;
    for (int s : readers)
      stageList += (stageList.empty() ? "'" : ", '") + plan.stages[s].name + "'";
    auto refuse = [&](const std::string &why) {
      step.emitError() << "het-partition: " << plan.file << ": stages " << stageList
                       << " all read parameter '" << name << "' (a tied weight): " << why;
      return failure();
    };
    if (tensorParallelSplit.count(name))
      return refuse("it is split over tensor-parallel devices, and the copies of a tied "
                    "parameter are kept whole; plan those stages without tensor_parallel");
    for (int s : readers)
      if (plan.stages[s].tensorParallel > 1)
        return refuse("stage '" + plan.stages[s].name +
                      "' has tensor_parallel " + std::to_string(plan.stages[s].tensorParallel) +
                      ", and the copies of a tied parameter are summed over whole replicas; plan "
                      "it without tensor_parallel");
    if (!lossWeighted)
      for (int s : readers)
        if (plan.stages[s].replicas() > 1)
          return refuse("stage '" + plan.stages[s].name +
                        "' has replicas that average their gradients (a given training step); "
                        "give het-compile the forward model, whose losses are weighted by share");
    if (updates.size() != 1)
      return refuse("the step has " + std::to_string(updates.size()) +
                    " optimizer updates of it; the copies need exactly one (train with "
                    "--optimizer sgd, adam or adamw)");
    Operation *update = updates.front();
    auto ownerIt = stageOf.find(update);
    if (ownerIt == stageOf.end())
      return refuse("its optimizer update has no layer");
    const int owner = ownerIt->second;

    // The gradient: parts from each reading layer, summed by het.add ops
    // (het-autodiff's accumulation). Each stage gets the sum of its parts.
    Value raw = rawGradient(update->getOperand(1));
    SmallVector<Operation *> sums; // root first
    std::map<int, SmallVector<Value>> parts;
    bool unknown = false;
    std::function<void(Value)> collect = [&](Value v) {
      auto add = v.getDefiningOp<AddOp>();
      if (add && (v == raw || v.hasOneUse()) && add.getLhs().getType() == v.getType() &&
          add.getRhs().getType() == v.getType()) {
        sums.push_back(add);
        collect(add.getLhs());
        collect(add.getRhs());
        return;
      }
      Operation *def = v.getDefiningOp();
      auto it = def ? stageOf.find(def) : stageOf.end();
      if (it == stageOf.end()) {
        unknown = true;
        return;
      }
      parts[it->second].push_back(v);
    };
    collect(raw);
    if (unknown)
      return refuse("a part of its gradient is computed outside every layer, so no stage can "
                    "sum it");
    TiedParameter tie;
    for (const auto &[s, values] : parts)
      readers.insert(s);
    readers.insert(owner);
    tie.stages.assign(readers.begin(), readers.end());
    Operation *root = raw.getDefiningOp();
    OpBuilder b(step.getContext());
    b.setInsertionPointAfter(root);
    auto type = cast<RankedTensorType>(raw.getType());
    for (int s : tie.stages) {
      Value partial;
      auto found = parts.find(s);
      if (found == parts.end()) {
        // A stage whose reads make no gradient (the update's own stage
        // without a reading layer): it adds zeros.
        partial = b.create<arith::ConstantOp>(
            step.getLoc(), DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
      } else {
        for (Value v : found->second) {
          if (!partial) {
            partial = v;
            continue;
          }
          auto add = b.create<AddOp>(v.getLoc(), type, partial, v);
          add->setAttr(HetDialect::getLayerAttrName(),
                       b.getI64IntegerAttr(layerOf(v.getDefiningOp())));
          stageOf[add] = s;
          partial = add;
        }
      }
      tie.partials[s] = partial;
    }
    // The step's readers take the update's own stage's partial sum; the
    // other stages' copies of the update take theirs (below).
    if (raw != tie.partials[owner])
      raw.replaceAllUsesWith(tie.partials[owner]);
    for (Operation *sum : sums) {
      stageOf.erase(sum);
      sum->erase();
    }

    // The update in every other stage: same operands (the stage holds its
    // own copy of each argument), its partial sum where the update read the
    // gradient directly, layered in that stage; and the selects loss
    // scaling returns its results through.
    for (int s : tie.stages) {
      if (s == owner)
        continue;
      int64_t layer = plan.stages[s].layerBegin;
      for (Operation *user : arg.getUsers())
        if (auto it = stageOf.find(user); it != stageOf.end() && it->second == s && user != update)
          layer = layerOf(user);
      OpBuilder after(update->getContext());
      after.setInsertionPointAfter(update);
      Operation *copy = after.clone(*update);
      if (copy->getOperand(1) == tie.partials[owner])
        copy->setOperand(1, tie.partials[s]);
      copy->setAttr(HetDialect::getLayerAttrName(), after.getI64IntegerAttr(layer));
      stageOf[copy] = s;
      out.updateCopies.insert(copy);
      for (unsigned k = 0; k < update->getNumResults(); ++k)
        for (OpOperand &use : update->getResult(k).getUses()) {
          if (use.getOwner() == returned) {
            out.resultCopies[use.getOperandNumber()].push_back({s, copy->getResult(k)});
            continue;
          }
          auto keep = dyn_cast<SelectOp>(use.getOwner());
          if (!keep)
            continue;
          OpBuilder at(keep);
          at.setInsertionPointAfter(keep);
          IRMapping map;
          map.map(update->getResult(k), copy->getResult(k));
          Operation *kept = at.clone(*keep, map);
          kept->setAttr(HetDialect::getLayerAttrName(), at.getI64IntegerAttr(layer));
          stageOf[kept] = s;
          out.updateCopies.insert(kept);
          for (OpOperand &keptUse : keep->getResult(0).getUses())
            if (keptUse.getOwner() == returned)
              out.resultCopies[keptUse.getOperandNumber()].push_back({s, kept->getResult(0)});
        }
    }
    for (const auto &[s, partial] : tie.partials)
      out.tieOfPartial[partial] = out.ties.size();
    out.ties.push_back(std::move(tie));
  }
  return out;
}

} // namespace het::partition
