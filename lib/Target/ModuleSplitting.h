//===- ModuleSplitting.h - one LLVM module into units of a few functions ---===//
//
// Each unit is a module of its own holding the definitions of one function
// (or of several small ones) and declarations of everything else, written
// as bitcode so that another thread can read it into its own LLVMContext.
// The units link back into the program the whole module was.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_TARGET_MODULESPLITTING_H
#define HET_LIB_TARGET_MODULESPLITTING_H

#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace het::target {

struct CodegenUnit {
  std::vector<std::string> functions; ///< the definitions it holds, by name
  /// Every function in it is straight-line glue (no loops: calls of the
  /// outlined layers, allocations, copies): optimising it buys nothing at
  /// run time and its register allocation grows faster than linearly with
  /// its length, so it is compiled at -O0.
  bool glue = false;
  llvm::SmallVector<char, 0> bitcode;
};

/// Splits `module`. Local functions and local variables become hidden
/// external symbols (defined in one unit, declared in the others); local
/// constants are copied into each unit that reads them, where they still
/// fold. Functions of fewer than `smallInstructions` instructions are
/// batched into shared units so tiny functions do not cost a unit each;
/// loop-free functions and the others never share a unit.
std::vector<CodegenUnit> splitByFunction(llvm::Module &module, unsigned smallInstructions = 2000);

/// Function definitions in `module`.
unsigned countDefinedFunctions(const llvm::Module &module);

} // namespace het::target

#endif // HET_LIB_TARGET_MODULESPLITTING_H
