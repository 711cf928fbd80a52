//===- ForkedRanks.cpp - a hetccl job of forked local ranks ---------------===//

#include "ForkedRanks.h"

#include "het/Support/CoreBinding.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace het::tune {

std::string runForkedRanks(int ranks, const std::string &what,
                           const std::function<std::string(const hetcclUniqueId &, int)> &run) {
  hetcclUniqueId id;
  if (hetcclGetUniqueId(&id) != hetcclSuccess)
    throw std::runtime_error(std::string("hetcclGetUniqueId: ") + hetcclGetLastError(nullptr));
  int fds[2];
  if (pipe(fds) != 0)
    throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  std::fflush(nullptr);
  std::vector<pid_t> children;
  // Each rank on its own cores, as het-run binds a job's ranks by default:
  // forked ranks start on the tuner's core, and the scheduler moved a
  // spin-waiting rank away only after seconds -- the first sizes of a 2-rank
  // sweep ran 3-5x slow for every algorithm, and recorded noise.
  std::vector<int> cpus = het::support::allowedCpus();
  for (int rank = 0; rank < ranks; ++rank) {
    pid_t pid = fork();
    if (pid < 0)
      throw std::runtime_error(std::string("fork: ") + strerror(errno));
    if (pid == 0) {
      close(fds[0]);
      if (!cpus.empty()) {
        std::string why = het::support::bindProcess(het::support::coresOfRank(cpus, rank, ranks));
        if (!why.empty())
          std::fprintf(stderr, "het-tune: warning: %s rank %d runs unbound: %s\n", what.c_str(),
                       rank, why.c_str());
      }
      int status = 0;
      try {
        std::string text = run(id, rank);
        if (rank == 0 && write(fds[1], text.data(), text.size()) != ssize_t(text.size()))
          status = 3;
      } catch (const std::exception &e) {
        std::fprintf(stderr, "het-tune: %s rank %d: %s\n", what.c_str(), rank, e.what());
        status = 1;
      }
      close(fds[1]);
      std::fflush(nullptr);
      _exit(status);
    }
    children.push_back(pid);
  }
  close(fds[1]);
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0)
    text.append(buffer, size_t(n));
  close(fds[0]);
  std::string failures;
  for (size_t rank = 0; rank < children.size(); ++rank) {
    int status = 0;
    waitpid(children[rank], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      failures += (failures.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) +
                  (WIFSIGNALED(status) ? " died of signal " + std::to_string(WTERMSIG(status))
                                       : " exited with " + std::to_string(WEXITSTATUS(status)));
  }
  if (!failures.empty())
    throw std::runtime_error("the " + what + " failed: " + failures + " (see above)");
  return text;
}

} // namespace het::tune
