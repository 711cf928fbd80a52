//===- BuildRecord.cpp - how a pipeline executable was compiled -----------===//
#include "BuildRecord.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

namespace het::compile {

namespace {
std::string absolute(const std::string &path) {
  llvm::SmallString<256> p(path);
  llvm::sys::fs::make_absolute(p);
  llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
  return std::string(p);
}
} // namespace

llvm::Error writeBuildRecord(const std::string &output, const std::vector<std::string> &argv,
                             const std::string &compiler, const std::string &model,
                             const std::string &cluster, const std::string &plan) {
  // The options recorded as fields (with their values), in any of the
  // spellings LLVM's command line accepts: -x v, --x v, -x=v, --x=v.
  static const std::set<std::string> fields = {"o", "cluster", "plan", "global-batch",
                                               "write-plan"};
  nlohmann::json options = nlohmann::json::array();
  bool modelSeen = false, positional = false;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string &a = argv[i];
    if (!positional && a[0] == '@')
      return llvm::createStringError(
          "the command line reads a response file (" + a +
          "): no build record, so het-run --elastic cannot re-plan this executable");
    if (!positional && a == "--") {
      positional = true; // the words after it are not options
      continue;
    }
    if (!positional && a.size() > 1 && a[0] == '-') {
      std::string name = a.substr(a.find_first_not_of('-'));
      std::string bare = name.substr(0, name.find('='));
      if (fields.count(bare)) {
        if (name.find('=') == std::string::npos)
          ++i; // its value is the next word
        continue;
      }
      options.push_back(a);
      continue;
    }
    if (!modelSeen && a == model) {
      modelSeen = true;
      continue;
    }
    if (positional)
      return llvm::createStringError("unexpected word '" + a + "' after '--'");
    options.push_back(a); // a value of an option kept above
  }
  int64_t globalBatch = 0, microBatches = 0;
  {
    std::ifstream in(plan);
    nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (doc.is_object()) {
      globalBatch = doc.value("global_batch", int64_t(0));
      microBatches = doc.value("micro_batches", int64_t(0));
    }
  }
  llvm::SmallString<256> directory;
  llvm::sys::fs::current_path(directory);
  nlohmann::json record = {{"format", "het-build/1"},
                           {"compiler", compiler},
                           {"directory", std::string(directory)},
                           {"model", absolute(model)},
                           {"cluster", cluster.empty() ? "" : absolute(cluster)},
                           {"plan", absolute(plan)},
                           {"global_batch", globalBatch},
                           {"micro_batches", microBatches},
                           {"options", options}};
  std::string path = output + ".build.json";
  std::ofstream out(path);
  out << record.dump(1) << "\n";
  if (!out.good())
    return llvm::createStringError("cannot write " + path);
  return llvm::Error::success();
}

} // namespace het::compile
