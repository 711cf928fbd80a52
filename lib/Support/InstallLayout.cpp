//===- InstallLayout.cpp - where an installed het finds its own files -----===//
//
// See include/het/Support/InstallLayout.h. The layout constants come from
// CMake (GNUInstallDirs), so a tree installed with another libdir still
// finds itself.
//
//===----------------------------------------------------------------------===//

#include "het/Support/InstallLayout.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#ifndef HET_INSTALL_BINDIR_TO_PREFIX
#error "HET_INSTALL_BINDIR_TO_PREFIX must be set by CMake"
#endif

namespace fs = std::filesystem;

namespace het {

std::string executableDirectory() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return "";
  return self.parent_path().string();
}

const char *libraryDirectoryBelowPrefix() { return HET_INSTALL_LIBDIR; }
const char *dataDirectoryBelowPrefix() { return HET_INSTALL_DATADIR; }

static bool present(const fs::path &where, const std::string &mustContain) {
  std::error_code ec;
  return fs::exists(mustContain.empty() ? where : where / mustContain, ec);
}

std::string expectedPlace(const InstalledPath &path) {
  const char *override = std::getenv(path.environmentVariable);
  if (override && *override)
    return override;
  std::string exeDir = executableDirectory();
  if (exeDir.empty())
    return "";
  return (fs::path(exeDir) / HET_INSTALL_BINDIR_TO_PREFIX / path.belowPrefix)
      .lexically_normal()
      .string();
}

std::string locate(const InstalledPath &path, std::vector<std::string> *tried) {
  std::string place = expectedPlace(path);
  if (place.empty())
    return "";
  if (tried) {
    const char *override = std::getenv(path.environmentVariable);
    tried->push_back(override && *override
                         ? std::string("$") + path.environmentVariable + "=" + place
                         : place);
  }
  return present(place, path.mustContain) ? place : "";
}

std::string whyNotFound(const InstalledPath &path, const std::vector<std::string> &tried) {
  std::string message = path.what + " not found";
  if (!path.mustContain.empty())
    message += " (a folder holding " + path.mustContain + ")";
  message += "; looked in ";
  for (size_t i = 0; i < tried.size(); ++i)
    message += (i ? ", " : "") + tried[i];
  if (tried.empty())
    message += "nothing (/proc/self/exe is unreadable)";
  message += std::string("; set $") + path.environmentVariable + " to its location";
  return message;
}

} // namespace het
