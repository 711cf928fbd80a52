//===- InstallLayout.h - where an installed het finds its own files --------===//
//
// Every het tool finds what it needs besides its own code (libhetrt, the
// device catalog, the ROCm toolkit folder) relative to the executable that
// is running, so an installed tree works wherever it is moved or copied.
// The build tree has the same layout (bin/, lib/, share/het/), so the same
// rule finds the build's files when a tool runs from it. An environment
// variable overrides each lookup. docs/install.md lists them.
//
// Plain C++ with no MLIR dependency: the planner core uses it too.
//
//===----------------------------------------------------------------------===//

#ifndef HET_SUPPORT_INSTALLLAYOUT_H
#define HET_SUPPORT_INSTALLLAYOUT_H

#include <string>
#include <vector>

namespace het {

/// The directory of the running executable (symlinks resolved), or "" when
/// /proc/self/exe cannot be read.
std::string executableDirectory();

/// One installed file or folder: an environment variable that overrides the
/// lookup, and the path below the installation prefix (as `lib/...` or
/// `share/het/...`, the GNUInstallDirs layout het was configured with).
struct InstalledPath {
  const char *environmentVariable;
  std::string belowPrefix;
  /// A file that must exist inside a folder for it to count ("" = the path
  /// itself must exist).
  std::string mustContain;
  /// What it is, for the error message ("the runtime library folder").
  std::string what;
};

/// Where `path` should be: $environmentVariable if set (even if wrong: an
/// explicit override is never silently ignored), else
/// <executable>/../<belowPrefix>; "" when /proc/self/exe is unreadable.
std::string expectedPlace(const InstalledPath &path);

/// expectedPlace() if it is there (holding `mustContain`), else "".
/// `tried` gets the place looked at, for whyNotFound.
std::string locate(const InstalledPath &path, std::vector<std::string> *tried = nullptr);

/// A one-line error message naming what was missing, where it looked and
/// the variable that overrides it.
std::string whyNotFound(const InstalledPath &path, const std::vector<std::string> &tried);

/// The installation layout het was configured with (GNUInstallDirs), below
/// the prefix: "lib" (or lib/<multiarch>) and "share/het".
const char *libraryDirectoryBelowPrefix();
const char *dataDirectoryBelowPrefix();

} // namespace het

#endif // HET_SUPPORT_INSTALLLAYOUT_H
