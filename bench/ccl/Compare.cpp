// hetccl-compare: in one run, all-reduce bus bandwidth of hetccl (shm,
// `auto` algorithm) vs OpenMPI's MPI_Allreduce (shared memory, via mpirun)
// vs Gloo's ring all-reduce (TCP on loopback), at 2 and 4 ranks, 4 KiB to
// 64 MiB, next to the memcpy bound (one core copying the buffer). Prints a
// Markdown table (docs/hetccl.md quotes it). With -C alltoallv: hetccl's
// AllToAllV against MPI_Alltoallv on uneven blocks (cclbench::
// alltoallvCount; Gloo is not run).
//
//   hetccl-compare [-np 2,4] [-r ROUNDS] [-C allreduce|alltoallv]
#include "Sizes.h"

#include "het-c/hetccl.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using Results = std::map<size_t, double>; // bytes -> seconds

// The run's private scratch folder (mkdtemp under $TMPDIR or /tmp): the
// workers' result files and Gloo's file store live there, so no other
// process can predict, pre-create or read them; removed at exit.
std::string scratch;

void makeScratch() {
  const char* tmp = getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/hetccl-compare-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back(0);
  if (!mkdtemp(buf.data())) {
    fprintf(stderr, "hetccl-compare: cannot make a scratch folder %s: %s\n", pattern.c_str(), strerror(errno));
    exit(1);
  }
  scratch = buf.data();
  atexit([] {
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
  });
}

std::string selfDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  std::string p(buf);
  return p.substr(0, p.rfind('/'));
}

Results parse(const std::string& path) {
  Results r;
  std::ifstream f(path);
  std::string tag;
  size_t bytes;
  double sec;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream is(line);
    if (is >> tag >> bytes >> sec && tag == "RESULT") r[bytes] = sec;
  }
  return r;
}

bool allToAllV = false; // -C alltoallv

int timedAllToAllV(int r, int n, hetcclComm_t comm, size_t bytes, double& t) {
  cclbench::AllToAllVBlocks<size_t> k(bytes, r, n);
  std::vector<float> a(k.sent + 1, float(r)), b(k.received + 1);
  auto once = [&] {
    return hetcclAllToAllV(a.data(), k.sendCounts.data(), k.sendOffsets.data(), b.data(), k.recvCounts.data(),
                           k.recvOffsets.data(), hetcclFloat32, comm);
  };
  int iters = cclbench::itersFor(bytes);
  for (int i = 0; i < iters / 10 + 1; ++i)
    if (once() != hetcclSuccess) return 2;
  hetcclBarrier(comm);
  double t0 = cclbench::now();
  for (int i = 0; i < iters; ++i)
    if (once() != hetcclSuccess) return 2;
  t = (cclbench::now() - t0) / iters;
  hetcclAllReduce(&t, &t, 1, hetcclFloat64, hetcclMax, comm);
  return k.recvCounts[n - 1] > 0 && b[k.recvOffsets[n - 1]] != float(n - 1) ? 3 : 0;
}

Results runHetccl(int n) {
  hetcclUniqueId id;
  if (hetcclGetUniqueId(&id) != hetcclSuccess) return {};
  std::string out = scratch + "/hetccl.txt";
  fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t p = fork();
    if (p == 0) {
      hetcclComm_t comm;
      if (hetcclCommInitRank(&comm, n, id, r, nullptr) != hetcclSuccess) _exit(1);
      FILE* f = r == 0 ? fopen(out.c_str(), "w") : nullptr;
      for (size_t bytes : cclbench::sizes()) {
        if (allToAllV) {
          double t = 0;
          if (int rc = timedAllToAllV(r, n, comm, bytes, t)) _exit(rc);
          if (f) cclbench::report(f, bytes, t);
          continue;
        }
        size_t count = bytes / 4;
        std::vector<float> a(count, 1.0f), b(count);
        int iters = cclbench::itersFor(bytes);
        for (int i = 0; i < iters / 10 + 1; ++i)
          if (hetcclAllReduce(a.data(), b.data(), count, hetcclFloat32, hetcclSum, comm) != hetcclSuccess) _exit(2);
        hetcclBarrier(comm);
        double t0 = cclbench::now();
        for (int i = 0; i < iters; ++i)
          if (hetcclAllReduce(a.data(), b.data(), count, hetcclFloat32, hetcclSum, comm) != hetcclSuccess) _exit(2);
        double t = (cclbench::now() - t0) / iters;
        hetcclAllReduce(&t, &t, 1, hetcclFloat64, hetcclMax, comm);
        if (b[0] != float(n)) _exit(3);
        if (f) cclbench::report(f, bytes, t);
      }
      if (f) fclose(f);
      hetcclCommDestroy(comm);
      _exit(0);
    }
    pids.push_back(p);
  }
  for (pid_t p : pids) waitpid(p, nullptr, 0);
  Results r = parse(out);
  unlink(out.c_str());
  return r;
}

Results runMpi(int n) {
  std::string worker = selfDir() + "/hetccl-compare-mpi";
  if (access(worker.c_str(), X_OK) != 0) return {};
  std::string out = scratch + "/mpi.txt";
  std::string cmd = "mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader -np " +
                    std::to_string(n) + " " + worker + (allToAllV ? " alltoallv" : "") + " > " + out +
                    " 2>/dev/null";
  if (system(cmd.c_str()) != 0) fprintf(stderr, "mpirun failed: %s\n", cmd.c_str());
  Results r = parse(out);
  unlink(out.c_str());
  return r;
}

Results runGloo(int n) {
  if (allToAllV) return {};
  std::string worker = selfDir() + "/hetccl-compare-gloo";
  if (access(worker.c_str(), X_OK) != 0) return {};
  std::string dir = scratch + "/gloo-store";
  std::string out = scratch + "/gloo.txt";
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  if (!std::filesystem::create_directory(dir, error)) return {};
  fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t p = fork();
    if (p == 0) {
      if (r == 0 && !freopen(out.c_str(), "w", stdout)) _exit(1);
      if (r != 0 && !freopen("/dev/null", "w", stdout)) _exit(1);
      execl(worker.c_str(), worker.c_str(), std::to_string(r).c_str(), std::to_string(n).c_str(), dir.c_str(),
            (char*)nullptr);
      _exit(127);
    }
    pids.push_back(p);
  }
  for (pid_t p : pids) waitpid(p, nullptr, 0);
  Results r = parse(out);
  unlink(out.c_str());
  std::filesystem::remove_all(dir, error);
  return r;
}

double memcpyGBs(size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes);
  int iters = cclbench::itersFor(bytes);
  memcpy(b.data(), a.data(), bytes);
  double bestT = 1e30;
  for (int round = 0; round < 3; ++round) {
    double t0 = cclbench::now();
    for (int i = 0; i < iters; ++i) {
      memcpy(b.data(), a.data(), bytes);
      asm volatile("" ::"r"(b.data()) : "memory");
    }
    bestT = std::min(bestT, cclbench::now() - t0);
  }
  return double(bytes) * iters / bestT / 1e9;
}

std::string human(size_t b) {
  if (b >= (1 << 20)) return std::to_string(b >> 20) + " MiB";
  return std::to_string(b >> 10) + " KiB";
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int> nps = {2, 4};
  int rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-np") == 0) {
      nps.clear();
      std::stringstream ss(argv[i + 1]);
      std::string t;
      while (std::getline(ss, t, ',')) nps.push_back(atoi(t.c_str()));
    } else if (strcmp(argv[i], "-r") == 0) {
      rounds = std::max(1, atoi(argv[i + 1]));
    } else if (strcmp(argv[i], "-C") == 0) {
      if (strcmp(argv[i + 1], "alltoallv") == 0) {
        allToAllV = true;
      } else if (strcmp(argv[i + 1], "allreduce") != 0) {
        fprintf(stderr, "hetccl-compare: unknown -C '%s' (use allreduce or alltoallv)\n", argv[i + 1]);
        return 2;
      }
    }
  }
  makeScratch();
  printf("# best of %d interleaved rounds per library (the host is shared; the best round is the least disturbed)\n",
         rounds);
  for (int n : nps) {
    Results h, m, g;
    auto best = [](Results& acc, const Results& r) {
      for (auto& [b, t] : r)
        if (!acc.count(b) || t < acc[b]) acc[b] = t;
    };
    for (int k = 0; k < rounds; ++k) {
      best(h, runHetccl(n));
      best(m, runMpi(n));
      best(g, runGloo(n));
    }
    // Bus bandwidth: what each rank moves over the wire per second.
    double f = allToAllV ? double(n - 1) / n : 2.0 * (n - 1) / n;
    if (allToAllV)
      printf("\n### %d ranks (all-to-all-v, f32, uneven blocks; busbw in GB/s)\n\n", n);
    else
      printf("\n### %d ranks (all-reduce, f32 sum, busbw in GB/s)\n\n", n);
    printf("| size | hetccl | OpenMPI (vader) | Gloo ring (TCP) | memcpy bound | hetccl/MPI | hetccl/Gloo |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t bytes : cclbench::sizes()) {
      auto bw = [&](const Results& r) { return r.count(bytes) ? f * bytes / r.at(bytes) / 1e9 : 0.0; };
      double hb = bw(h), mb = bw(m), gb = bw(g);
      auto cell = [](double v) {
        char b[32];
        if (v <= 0) return std::string("n/a");
        snprintf(b, sizeof b, "%.3f", v);
        return std::string(b);
      };
      auto ratio = [](double a, double b) {
        char s[32];
        if (a <= 0 || b <= 0) return std::string("n/a");
        snprintf(s, sizeof s, "%.2fx", a / b);
        return std::string(s);
      };
      printf("| %s | %s | %s | %s | %s | %s | %s |\n", human(bytes).c_str(), cell(hb).c_str(), cell(mb).c_str(),
             cell(gb).c_str(), cell(memcpyGBs(bytes)).c_str(), ratio(hb, mb).c_str(), ratio(hb, gb).c_str());
      fflush(stdout);
    }
  }
  return 0;
}
