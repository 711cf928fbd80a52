//===- Elastic.cpp - re-plan a job on the devices left after a loss -------===//
#include "Elastic.h"

#include "het/Plan/ClusterSurvivors.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <regex>
#include <csignal>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace hetrun {

BuildRecord readBuildRecord(const std::string &program) {
  BuildRecord b;
  b.file = program + ".build.json";
  std::ifstream in(b.file);
  if (!in)
    throw std::runtime_error("--elastic re-plans by compiling the model again, as " + b.file +
                             " says; it cannot be read (" + std::strerror(errno) +
                             "): build the program with het-compile --cluster");
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    if (j.value("format", "") != "het-build/1")
      throw std::runtime_error("its format is not het-build/1");
    b.compiler = j.at("compiler").get<std::string>();
    b.directory = j.at("directory").get<std::string>();
    b.model = j.at("model").get<std::string>();
    b.cluster = j.at("cluster").get<std::string>();
    b.plan = j.at("plan").get<std::string>();
    b.globalBatch = j.at("global_batch").get<int64_t>();
    b.options = j.at("options").get<std::vector<std::string>>();
  } catch (const std::exception &e) {
    throw std::runtime_error(b.file + ": " + e.what());
  }
  return b;
}

std::vector<int> lostRanks(const JobResult &r) {
  std::vector<int> lost;
  for (size_t k = 0; k < r.fates.size(); ++k)
    if (!r.fates[k].exited && r.fates[k].signal == SIGKILL && !r.fates[k].killedByUs)
      lost.push_back(static_cast<int>(k));
  return lost;
}

std::vector<std::string> recompile(const BuildRecord &build, const std::string &clusterFile,
                                   const std::string &output) {
  std::vector<std::string> args = {build.compiler, build.model};
  args.insert(args.end(), build.options.begin(), build.options.end());
  args.insert(args.end(), {"--cluster", clusterFile, "--plan", "auto", "-o", output});
  if (build.globalBatch > 0)
    args.insert(args.end(), {"--global-batch", std::to_string(build.globalBatch)});
  std::string log = output + ".compile.log";
  pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::chdir(build.directory.c_str()) != 0)
      ::_exit(126);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char *> argv;
    for (std::string &a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::ifstream in(log);
  std::vector<std::string> lines, summary;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  static const std::regex planLine(R"(^\s*(stage s[0-9]+: |predicted iteration time))");
  for (const std::string &line : lines)
    if (std::regex_search(line, planLine))
      summary.push_back(line.substr(line.find_first_not_of(' ')));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string tail;
    for (size_t i = lines.size() > 8 ? lines.size() - 8 : 0; i < lines.size(); ++i)
      tail += "\n  " + lines[i];
    throw std::runtime_error("re-planning failed: " + build.compiler + " exited with " +
                             (WIFEXITED(status) ? "status " + std::to_string(WEXITSTATUS(status))
                                                : "signal " + std::to_string(WTERMSIG(status))) +
                             " (" + log + "):" + tail);
  }
  return summary;
}

namespace {
/// What makes two cluster specs the same devices (not their names).
std::string devicesKey(const nlohmann::json &spec) {
  return nlohmann::json{{"nodes", spec.at("nodes")}, {"network", spec.value("network", nlohmann::json())}}
      .dump();
}
} // namespace

ElasticPlans::ElasticPlans(BuildRecord build, const std::string &clusterFile,
                           const std::string &program)
    : build_(std::move(build)), program_(program) {
  std::ifstream in(clusterFile);
  try {
    original_ = nlohmann::json::parse(in);
  } catch (const std::exception &e) {
    throw std::runtime_error(clusterFile + ": " + e.what());
  }
  Choice first;
  first.program = program;
  first.clusterFile = clusterFile;
  // Keyed as forLost makes its specs (withoutDevices writes every node's count).
  byDevices_[devicesKey(het::plan::withoutDevices(original_, {}))] = first;
}

ElasticPlans::Choice ElasticPlans::forLost(const std::map<std::string, int> &lost) {
  nlohmann::json spec = het::plan::withoutDevices(original_, lost);
  std::string key = devicesKey(spec);
  if (auto it = byDevices_.find(key); it != byDevices_.end()) {
    Choice again = it->second;
    again.compiled = false;
    again.summary.clear();
    again.seconds = 0;
    return again;
  }
  Choice c;
  c.compiled = true;
  c.key = key;
  c.program = program_ + ".elastic-" + std::to_string(++compiled_);
  c.clusterFile = c.program + ".cluster.json";
  spec["name"] = original_.value("name", "cluster") + "-survivors-" + std::to_string(compiled_);
  std::ofstream out(c.clusterFile);
  out << spec.dump(2) << "\n";
  if (!out.good())
    throw std::runtime_error("cannot write " + c.clusterFile);
  return c;
}

void ElasticPlans::compile(Choice &c) {
  auto start = std::chrono::steady_clock::now();
  c.summary = recompile(build_, c.clusterFile, c.program);
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  byDevices_[c.key] = c;
}

} // namespace hetrun
