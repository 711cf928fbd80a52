// Faults become errors, never hangs: timeouts fire, abort unblocks a
// blocked call, a SIGKILLed or SIGSTOPped peer turns into an error on every
// other rank within 2x the timeout (shm and TCP), intruders without the job
// token and malformed or oversized messages are refused and logged, bad
// arguments fail with a message and leave the communicator usable.
#include "Harness.h"

#include "Bootstrap/UniqueId.h"
#include "Net/Frame.h"
#include "Net/Socket.h"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace hetccltest;

namespace {


TEST(Faults, TimeoutFiresWhenPeerNeverCalls) {
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t comm = initRank(rank, n, id, 30000);
    RCHECK(comm, "init");
    if (rank == 1) {
      usleep(2500000); // never joins the collective
      return 0;
    }
    RCALL(hetcclCommSetTimeout(comm, 1000));
    std::vector<float> b(1024, 1.0f);
    double t0 = nowSec();
    hetcclResult_t res = hetcclAllReduce(b.data(), b.data(), b.size(), hetcclFloat32, hetcclSum, comm);
    double dt = nowSec() - t0;
    printf("timeout: call failed after %.3f s (timeout 1.000 s): %s\n", dt, hetcclGetLastError(comm));
    RCHECK(res == hetcclTimeout, "got %s", hetcclGetErrorString(res));
    RCHECK(dt >= 0.95 && dt < 2.0, "took %.3f s", dt);
    hetcclResult_t async;
    RCALL(hetcclCommGetAsyncError(comm, &async));
    RCHECK(async == hetcclTimeout, "async error %d", int(async));
    RCHECK(hetcclAllReduce(b.data(), b.data(), 1, hetcclFloat32, hetcclSum, comm) == hetcclTimeout,
           "a failed communicator must refuse further calls");
    RCALL(hetcclCommAbort(comm));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

TEST(Faults, InitTimesOutWhenARankNeverComes) {
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    if (rank == 1) return 0;
    hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
    cfg.timeoutMs = 800;
    hetcclComm_t comm;
    double t0 = nowSec();
    hetcclResult_t res = hetcclCommInitRank(&comm, n, id, rank, &cfg);
    double dt = nowSec() - t0;
    printf("init timeout after %.3f s: %s\n", dt, hetcclGetLastError(nullptr));
    RCHECK(res == hetcclTimeout, "got %s", hetcclGetErrorString(res));
    RCHECK(dt < 1.6, "took %.3f s", dt);
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

TEST(Faults, AbortUnblocksABlockedCallAndPeersFailFast) {
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t comm = initRank(rank, n, id, 30000);
    RCHECK(comm, "init");
    std::vector<float> b(1 << 16, 1.0f);
    if (rank == 1) {
      usleep(1000000); // rank 0 has aborted by now
      double t0 = nowSec();
      hetcclResult_t res = hetcclAllReduce(b.data(), b.data(), b.size(), hetcclFloat32, hetcclSum, comm);
      double dt = nowSec() - t0;
      printf("peer of aborted rank: failed after %.3f s (timeout 30 s): %s\n", dt, hetcclGetLastError(comm));
      RCHECK(res != hetcclSuccess, "collective with an aborted peer succeeded");
      RCHECK(dt < 5.0, "took %.3f s", dt);
      hetcclCommAbort(comm);
      return 0;
    }
    std::atomic<int> res{-1};
    std::atomic<double> returned{0};
    std::thread t([&] {
      res = hetcclAllReduce(b.data(), b.data(), b.size(), hetcclFloat32, hetcclSum, comm);
      returned = nowSec();
    });
    usleep(300000);
    double t0 = nowSec();
    RCALL(hetcclCommAbort(comm));
    t.join();
    double dt = returned.load() - t0;
    printf("abort: blocked call returned %.3f s after hetcclCommAbort\n", dt);
    RCHECK(res == hetcclAborted, "blocked call returned %d", res.load());
    RCHECK(dt < 0.5, "took %.3f s", dt);
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

// Rank 2 dies (SIGKILL) or hangs (SIGSTOP) in the middle of a loop of
// all-reduces; ranks 0 and 1 must see an error within 2x the timeout.
int peerFault(int rank, int n, const hetcclUniqueId& id, int sig, bool tcp) {
  if (tcp) setenv("HETCCL_TRANSPORT", "tcp", 1);
  const int64_t timeoutMs = 2000;
  hetcclComm_t comm = initRank(rank, n, id, timeoutMs);
  RCHECK(comm, "init");
  std::vector<float> b(1 << 18, 1.0f);
  for (int it = 0; it < 1000; ++it) {
    if (rank == 2 && it == 5) raise(sig);
    double t0 = nowSec();
    hetcclResult_t res = hetcclAllReduce(b.data(), b.data(), b.size(), hetcclFloat32, hetcclSum, comm);
    double dt = nowSec() - t0;
    if (res != hetcclSuccess) {
      printf("%s peer (%s): rank %d got '%s' after %.3f s (timeout %.1f s): %s\n", sig == SIGKILL ? "SIGKILL" : "SIGSTOP",
             tcp ? "tcp" : "shm", rank, hetcclGetErrorString(res), dt, timeoutMs / 1000.0, hetcclGetLastError(comm));
      RCHECK(it >= 5, "failed before the fault");
      RCHECK(dt < 2.0 * timeoutMs / 1000.0, "detection took %.3f s", dt);
      hetcclCommAbort(comm);
      return 0;
    }
  }
  RCHECK(false, "no error although rank 2 is gone");
}

TEST(Faults, SigkilledPeerBecomesErrorShm) {
  auto r = runRanks(3, [](int rank, int n, const hetcclUniqueId& id) { return peerFault(rank, n, id, SIGKILL, false); }, 60);
  EXPECT_EQ(r[2].signal, SIGKILL);
  r.pop_back();
  EXPECT_TRUE(allOk(r));
}

TEST(Faults, SigkilledPeerBecomesErrorTcp) {
  auto r = runRanks(3, [](int rank, int n, const hetcclUniqueId& id) { return peerFault(rank, n, id, SIGKILL, true); }, 60);
  EXPECT_EQ(r[2].signal, SIGKILL);
  r.pop_back();
  EXPECT_TRUE(allOk(r));
}

TEST(Faults, SigstoppedPeerBecomesErrorShm) {
  auto r = runRanks(3, [](int rank, int n, const hetcclUniqueId& id) { return peerFault(rank, n, id, SIGSTOP, false); }, 60, {2});
  r.pop_back();
  EXPECT_TRUE(allOk(r));
}

TEST(Faults, SigstoppedPeerBecomesErrorTcp) {
  auto r = runRanks(3, [](int rank, int n, const hetcclUniqueId& id) { return peerFault(rank, n, id, SIGSTOP, true); }, 60, {2});
  r.pop_back();
  EXPECT_TRUE(allOk(r));
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

pid_t forkRank(const std::function<int()>& body) {
  fflush(stdout);
  fflush(stderr);
  pid_t p = fork();
  if (p == 0) {
    int rc = body();
    fflush(stdout);
    fflush(stderr);
    _exit(rc);
  }
  return p;
}

int waitExit(pid_t p) {
  int st = 0;
  waitpid(p, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// One rank of a real 2-rank job: joins, all-reduces 1 + 1, leaves. The
// exit status says what failed (0: nothing).
int allReduceOnce(int rank, const hetcclUniqueId& id) {
  hetcclComm_t comm = initRank(rank, 2, id, 20000);
  if (!comm) return 1;
  float x = 1;
  if (hetcclAllReduce(&x, &x, 1, hetcclFloat32, hetcclSum, comm) != hetcclSuccess || x != 2) return 2;
  hetcclCommDestroy(comm);
  return 0;
}

// Rank 0 of a real job, with its stderr in a file we can inspect.
pid_t forkLoggedRoot(const hetcclUniqueId& id, const std::string& log) {
  return forkRank([id, log] {
    if (!freopen(log.c_str(), "w", stderr)) return 3;
    return allReduceOnce(0, id);
  });
}

pid_t forkRank1(const hetcclUniqueId& id) {
  return forkRank([id] { return allReduceOnce(1, id); });
}

// hetcclGetUniqueIdAt: the root is exactly what the caller says (port 0:
// a free one), whatever HETCCL_ROOT/MASTER_* say; the id forms a job.
TEST(Bootstrap, UniqueIdAtAGivenRoot) {
  hetcclUniqueId id;
  setenv("HETCCL_ROOT", "127.0.0.1:1", 1);
  ASSERT_EQ(hetcclGetUniqueIdAt(&id, "127.0.0.1:0"), hetcclSuccess) << hetcclGetLastError(nullptr);
  unsetenv("HETCCL_ROOT");
  hetccl::IdData d = hetccl::decodeId(id);
  EXPECT_STREQ(d.host, "127.0.0.1");
  EXPECT_NE(d.port, 0);
  EXPECT_NE(d.port, 1);
  pid_t root = forkRank([id] { return allReduceOnce(0, id); });
  pid_t other = forkRank1(id);
  EXPECT_EQ(waitExit(root), 0);
  EXPECT_EQ(waitExit(other), 0);

  hetcclUniqueId fixed;
  ASSERT_EQ(hetcclGetUniqueIdAt(&fixed, "127.0.0.1:29999"), hetcclSuccess);
  EXPECT_EQ(hetccl::decodeId(fixed).port, 29999);
  EXPECT_EQ(hetcclGetUniqueIdAt(&fixed, "127.0.0.1"), hetcclInvalidArgument);
  EXPECT_NE(std::string(hetcclGetLastError(nullptr)).find("expected host:port"), std::string::npos)
      << hetcclGetLastError(nullptr);
  EXPECT_EQ(hetcclGetUniqueIdAt(&fixed, nullptr), hetcclInvalidArgument);
}

// A picked root port lies below the kernel's ephemeral range: one inside
// it can be taken, before rank 0 binds it, as the source port of any
// connect() on the host -- a rank's own connect to the root included.
TEST(Bootstrap, PickedRootPortIsOutsideTheEphemeralRange) {
  int low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
  ASSERT_GT(low, 1024 + 64) << "no room below the ephemeral range on this host";
  for (int k = 0; k < 20; ++k) {
    hetcclUniqueId id;
    ASSERT_EQ(hetcclGetUniqueId(&id), hetcclSuccess) << hetcclGetLastError(nullptr);
    int port = hetccl::decodeId(id).port;
    EXPECT_GE(port, 1024);
    EXPECT_LT(port, low);
    ASSERT_EQ(hetcclGetUniqueIdAt(&id, "127.0.0.1:0"), hetcclSuccess);
    EXPECT_LT(hetccl::decodeId(id).port, low);
  }
}

TEST(Security, WrongTokenIsRefusedAndLogged) {
  hetcclUniqueId id;
  ASSERT_EQ(hetcclGetUniqueId(&id), hetcclSuccess);
  // Same root address, different (random) token.
  hetcclUniqueId bad;
  ASSERT_EQ(hetcclGetUniqueId(&bad), hetcclSuccess);
  hetccl::IdData good = hetccl::decodeId(id), evil = hetccl::decodeId(bad);
  memcpy(evil.host, good.host, sizeof evil.host);
  evil.port = good.port;
  evil.jobId = good.jobId;
  bad = hetccl::encodeId(evil);
  std::string log = "/tmp/hetccl-wrongtoken-" + std::to_string(getpid()) + ".log";
  pid_t root = forkLoggedRoot(id, log);
  pid_t intruder = forkRank([bad] {
    hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
    cfg.timeoutMs = 5000;
    hetcclComm_t comm;
    hetcclResult_t r = hetcclCommInitRank(&comm, 2, bad, 1, &cfg);
    printf("intruder: %s: %s\n", hetcclGetErrorString(r), hetcclGetLastError(nullptr));
    return r == hetcclAuthError ? 0 : 1;
  });
  EXPECT_EQ(waitExit(intruder), 0) << "the intruder was not refused with hetcclAuthError";
  pid_t r1 = forkRank1(id);
  EXPECT_EQ(waitExit(r1), 0);
  EXPECT_EQ(waitExit(root), 0);
  std::string text = slurp(log);
  EXPECT_NE(text.find("refused connection from 127.0.0.1"), std::string::npos) << text;
  EXPECT_NE(text.find("wrong job token"), std::string::npos) << text;
  unlink(log.c_str());
}

// Raw sockets speaking garbage to the root: bad magic, an oversized length,
// silence. Each is dropped and logged; the real job still forms.
TEST(Security, MalformedAndOversizedMessagesAreRejected) {
  hetcclUniqueId id;
  ASSERT_EQ(hetcclGetUniqueId(&id), hetcclSuccess);
  hetccl::IdData d = hetccl::decodeId(id);
  std::string log = "/tmp/hetccl-malformed-" + std::to_string(getpid()) + ".log";
  pid_t root = forkLoggedRoot(id, log);
  hetccl::SockAddr a{d.host, d.port};
  auto dl = hetccl::Deadline::afterMs(5000);
  {
    hetccl::Fd s = hetccl::connectRetry(a, dl, nullptr);
    hetccl::recvFrame(s.get(), hetccl::FrameType::Challenge, 32, dl, nullptr);
    uint32_t hdr[3] = {0xdeadbeef, 2, 64};
    hetccl::sendAll(s.get(), hdr, sizeof hdr, dl, nullptr);
    char c;
    EXPECT_LE(recv(s.get(), &c, 1, 0), 0) << "root kept a connection with a bad magic open";
  }
  {
    hetccl::Fd s = hetccl::connectRetry(a, dl, nullptr);
    hetccl::recvFrame(s.get(), hetccl::FrameType::Challenge, 32, dl, nullptr);
    uint32_t hdr[3] = {hetccl::kFrameMagic, 2, 1u << 30}; // claims 1 GiB
    hetccl::sendAll(s.get(), hdr, sizeof hdr, dl, nullptr);
    char c;
    EXPECT_LE(recv(s.get(), &c, 1, 0), 0) << "root kept a connection with an oversized frame open";
  }
  pid_t r1 = forkRank1(id);
  EXPECT_EQ(waitExit(r1), 0);
  EXPECT_EQ(waitExit(root), 0);
  std::string text = slurp(log);
  EXPECT_NE(text.find("bad magic"), std::string::npos) << text;
  EXPECT_NE(text.find("oversized message"), std::string::npos) << text;
  unlink(log.c_str());
}

TEST(Errors, BadArgumentsNameTheProblemAndLeaveTheCommUsable) {
  auto r = runRanks(1, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t comm = initRank(rank, n, id, 5000);
    RCHECK(comm, "init");
    float x = 1;
    RCHECK(hetcclAllReduce(&x, &x, 1, hetcclDataType_t(42), hetcclSum, comm) == hetcclInvalidArgument, "bad type");
    RCHECK(strstr(hetcclGetLastError(comm), "datatype 42") != nullptr, "message: %s", hetcclGetLastError(comm));
    RCHECK(hetcclAllReduce(nullptr, &x, 1, hetcclFloat32, hetcclSum, comm) == hetcclInvalidArgument, "null");
    RCHECK(strstr(hetcclGetLastError(comm), "sendbuff is NULL") != nullptr, "message: %s", hetcclGetLastError(comm));
    RCHECK(hetcclBroadcast(&x, &x, 1, hetcclFloat32, 3, comm) == hetcclInvalidArgument, "root");
    RCHECK(strstr(hetcclGetLastError(comm), "root 3") != nullptr, "message: %s", hetcclGetLastError(comm));
    RCHECK(hetcclReduce(&x, &x, 1, hetcclFloat32, hetcclRedOp_t(-1), 0, comm) == hetcclInvalidArgument, "op");
    RCHECK(hetcclSend(&x, 1, hetcclFloat32, 0, comm) == hetcclInvalidArgument, "send to self");
    RCHECK(hetcclCommSetAlgorithm(comm, hetcclAlgo_t(9)) == hetcclInvalidArgument, "algo");
    RCHECK(hetcclCommSetCompression(comm, hetcclCompressTopK, 0.0) == hetcclInvalidArgument, "ratio");
    hetcclAlgo_t a;
    RCHECK(hetcclAlgoFromName("bogus", &a) == hetcclInvalidArgument, "name");
    RCHECK(strstr(hetcclGetLastError(comm), "bogus") != nullptr, "message");
    RCALL(hetcclAllReduce(&x, &x, 1, hetcclFloat32, hetcclSum, comm)); // still usable
    RCALL(hetcclCommDestroy(comm));
    hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
    cfg.size = 3;
    hetcclComm_t c2;
    RCHECK(hetcclCommInitRank(&c2, 1, id, 0, &cfg) == hetcclInvalidArgument, "config size");
    RCHECK(hetcclCommInitRank(&c2, 2, id, 5, nullptr) == hetcclInvalidArgument, "rank range");
    RCHECK(strstr(hetcclGetLastError(nullptr), "rank 5 is out of range") != nullptr, "message: %s", hetcclGetLastError(nullptr));
    hetcclUniqueId junk;
    memset(&junk, 0x42, sizeof junk);
    RCHECK(hetcclCommInitRank(&c2, 1, junk, 0, nullptr) == hetcclInvalidArgument, "junk id");
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

TEST(Errors, MismatchedCountsAcrossRanksAreReportedNotCorrupted) {
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t comm = initRank(rank, n, id, 5000);
    RCHECK(comm, "init");
    RCALL(hetcclCommSetAlgorithm(comm, hetcclAlgoTree));
    std::vector<float> b(100, 1.0f);
    hetcclResult_t res = hetcclAllReduce(b.data(), b.data(), rank == 0 ? 100 : 60, hetcclFloat32, hetcclSum, comm);
    printf("mismatch: rank %d: %s: %s\n", rank, hetcclGetErrorString(res), hetcclGetLastError(comm));
    RCHECK(res != hetcclSuccess, "mismatched counts went unnoticed");
    hetcclCommAbort(comm);
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

} // namespace
