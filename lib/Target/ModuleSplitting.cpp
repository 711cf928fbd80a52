//===- ModuleSplitting.cpp - one LLVM module into units of a few functions -===//
//
// What llvm::SplitModule does for parallel LTO code generation, with two
// differences het needs: units follow function boundaries deterministically
// (so one changed layer changes one unit, and the object cache keeps the
// others), and read-only constants are duplicated rather than shared (a
// generated kernel's constant tables stay foldable in its own unit).
//
//===----------------------------------------------------------------------===//

#include "ModuleSplitting.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <map>

using namespace het::target;

namespace {

/// Functions whose instructions use `value`, through constant expressions.
void collectUsingFunctions(const llvm::Value *value,
                           llvm::SmallPtrSetImpl<const llvm::Function *> &functions,
                           llvm::SmallPtrSetImpl<const llvm::Value *> &seen) {
  if (!seen.insert(value).second)
    return;
  for (const llvm::User *user : value->users()) {
    if (auto *instruction = llvm::dyn_cast<llvm::Instruction>(user))
      functions.insert(instruction->getFunction());
    else if (llvm::isa<llvm::Constant>(user) && !llvm::isa<llvm::GlobalValue>(user))
      collectUsingFunctions(user, functions, seen);
    else if (auto *global = llvm::dyn_cast<llvm::GlobalVariable>(user))
      // A constant initialised with this one's address goes wherever
      // it goes; treat it as used everywhere (rare in generated code).
      for (const llvm::Function &function : *global->getParent())
        functions.insert(&function);
  }
}

bool isLoopFree(const llvm::Function &function) {
  llvm::SmallVector<std::pair<const llvm::BasicBlock *, const llvm::BasicBlock *>> backEdges;
  llvm::FindFunctionBackedges(function, backEdges);
  return backEdges.empty();
}

bool isDuplicatedConstant(const llvm::GlobalVariable &global) {
  return global.hasLocalLinkage() && global.isConstant() && global.hasInitializer();
}

} // namespace

unsigned het::target::countDefinedFunctions(const llvm::Module &module) {
  unsigned count = 0;
  for (const llvm::Function &function : module)
    count += !function.isDeclaration();
  return count;
}

std::vector<CodegenUnit> het::target::splitByFunction(llvm::Module &module,
                                                       unsigned smallInstructions) {
  // Local symbols other than read-only constants are referenced across
  // units once split: give them names and hidden external linkage.
  for (llvm::GlobalValue &global : module.global_values()) {
    if (auto *variable = llvm::dyn_cast<llvm::GlobalVariable>(&global))
      if (isDuplicatedConstant(*variable))
        continue;
    if (!global.hasLocalLinkage() || global.isDeclaration())
      continue;
    if (!global.hasName())
      global.setName("het.local");
    global.setLinkage(llvm::GlobalValue::ExternalLinkage);
    global.setVisibility(llvm::GlobalValue::HiddenVisibility);
  }

  // Units: large functions alone, small ones batched in module order, glue
  // (loop-free functions) and loops apart.
  std::vector<std::vector<const llvm::Function *>> units;
  std::vector<bool> glue;
  std::vector<const llvm::Function *> batch[2];
  unsigned batchSize[2] = {0, 0};
  auto close = [&](int kind) {
    if (batch[kind].empty())
      return;
    units.push_back(std::move(batch[kind]));
    glue.push_back(kind == 1);
    batch[kind].clear();
    batchSize[kind] = 0;
  };
  for (const llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    int kind = isLoopFree(function) ? 1 : 0;
    unsigned size = function.getInstructionCount();
    if (size >= smallInstructions) {
      units.push_back({&function});
      glue.push_back(kind == 1);
      continue;
    }
    batch[kind].push_back(&function);
    batchSize[kind] += size;
    if (batchSize[kind] >= smallInstructions)
      close(kind);
  }
  close(0);
  close(1);
  if (units.empty()) {
    units.emplace_back();
    glue.push_back(false);
  }

  // The unit each function is in; read-only constants go to every unit
  // reading them, other variables to the first unit.
  std::map<const llvm::Function *, unsigned> unitOf;
  for (unsigned i = 0; i < units.size(); ++i)
    for (const llvm::Function *function : units[i])
      unitOf[function] = i;
  std::map<const llvm::GlobalVariable *, llvm::SmallVector<unsigned, 2>> constantUnits;
  for (const llvm::GlobalVariable &global : module.globals()) {
    if (!isDuplicatedConstant(global))
      continue;
    llvm::SmallPtrSet<const llvm::Function *, 8> users;
    llvm::SmallPtrSet<const llvm::Value *, 8> seen;
    collectUsingFunctions(&global, users, seen);
    llvm::SmallSetVector<unsigned, 2> where;
    for (const llvm::Function *user : users)
      if (auto found = unitOf.find(user); found != unitOf.end())
        where.insert(found->second);
    constantUnits[&global] = llvm::SmallVector<unsigned, 2>(where.begin(), where.end());
  }

  std::vector<CodegenUnit> result;
  for (unsigned i = 0; i < units.size(); ++i) {
    llvm::SmallPtrSet<const llvm::Function *, 8> members(units[i].begin(), units[i].end());
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue *global) {
          if (auto *function = llvm::dyn_cast<llvm::Function>(global))
            return members.contains(function);
          if (auto *variable = llvm::dyn_cast<llvm::GlobalVariable>(global)) {
            if (isDuplicatedConstant(*variable))
              return llvm::is_contained(constantUnits[variable], i);
            return i == 0;
          }
          return i == 0;
        });
    // Unit modules of identical content must be identical bitcode: the
    // cache key is their hash.
    part->setModuleIdentifier("het");
    part->setSourceFileName("het");
    // Declarations this unit does not use go: a unit's bitcode then depends
    // only on what it defines and calls, so a change elsewhere in the model
    // leaves its cache entry valid.
    for (llvm::GlobalVariable &global : llvm::make_early_inc_range(part->globals()))
      if (global.isDeclaration() && global.use_empty())
        global.eraseFromParent();
    for (llvm::Function &function : llvm::make_early_inc_range(*part))
      if (function.isDeclaration() && function.use_empty())
        function.eraseFromParent();
    CodegenUnit unit;
    unit.glue = glue[i];
    for (const llvm::Function *function : units[i])
      unit.functions.push_back(function->getName().str());
    llvm::raw_svector_ostream os(unit.bitcode);
    llvm::WriteBitcodeToFile(*part, os);
    result.push_back(std::move(unit));
  }
  return result;
}
