//===- Npy.h - NumPy .npy and .npz files ---------------------------*- C++ -*-===//
//
// Reads and writes the formats numpy.save / numpy.savez(_compressed) use, so
// numpy users can feed the evaluator and inspect its results. Supported
// dtypes: float16/32/64, int8/16/32/64, uint8, bool (integers and bools are
// read as int64); C order only. Every failure names the file and the reason.
//
//===----------------------------------------------------------------------===//

#ifndef HET_EVAL_NPY_H
#define HET_EVAL_NPY_H

#include "het/Eval/HostArray.h"

#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace het::eval {

/// The header of a .npy file: what its data is and where it starts.
struct NpyHeader {
  std::vector<int64_t> shape;
  std::string dtype;     // numpy's type code without the byte order: "f4", "i8", ...
  size_t width = 0;      // bytes per element
  size_t dataOffset = 0; // the first byte of the data
  int64_t numElements() const;
};
/// Parses the header at the start of `bytes` (at least the header: a
/// memory-mapped file's, say); checks the dtype is one we read, C order,
/// little-endian. `source` names the file in errors.
llvm::Expected<NpyHeader> parseNpyHeader(llvm::StringRef bytes, const std::string &source);

/// Parses the bytes of one .npy file; `source` names it in errors.
llvm::Expected<HostArray> parseNpy(const std::string &bytes, const std::string &source);
/// Serializes as .npy (little-endian '<f4', '<f8' or '<i8').
std::string serializeNpy(const HostArray &array);

llvm::Expected<HostArray> readNpy(const std::string &path);
llvm::Error writeNpy(const std::string &path, const HostArray &array);

/// An .npz archive: array name (without ".npy") -> array, in archive order.
using NamedArrays = std::vector<std::pair<std::string, HostArray>>;
llvm::Expected<NamedArrays> readNpz(const std::string &path);
/// Writes atomically (a temporary file renamed over `path`).
llvm::Error writeNpz(const std::string &path, const NamedArrays &arrays);

} // namespace het::eval

#endif // HET_EVAL_NPY_H
