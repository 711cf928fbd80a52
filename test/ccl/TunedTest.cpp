// hetccl's `auto` with a tuning database (lib/CCL/Algorithms/Tuned.cpp):
// records written through lib/Tune's API, read by the ranks' hetccl through
// HETCCL_TUNING_DB. What must hold: every rank takes rank 0's table (so all
// run the same algorithm), only records of this communicator's key, this
// host and this het count, a call takes the record nearest its size, results
// stay exact, and an unusable file changes nothing but a warning.
#include "Harness.h"

#include "het/Tune/TuningDatabase.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace hetccltest;
using het::tune::Record;
using het::tune::TuningDatabase;

namespace {

std::string scratchPath(const char* name) {
  return "/tmp/hetccl-tuned-" + std::to_string(getpid()) + "-" + name;
}

Record collectiveRecord(const std::string& key, uint64_t bytes, const char* choice,
                        const std::string& host = het::tune::hostIdentity()) {
  Record r;
  r.kind = "collective";
  r.workload = key + std::to_string(bytes);
  r.device = "cpu";
  r.host = host;
  r.hetVersion = het::tune::hetVersion();
  r.choice = choice;
  r.seconds = 1e-5;
  r.details = "{}";
  r.measuredAt = het::tune::utcNow();
  return r;
}

// A database whose choices no cost table would make: tree at 4 KiB, ps at
// 64 KiB, halving-doubling at 1 MiB; plus records that must not count.
std::string writeDatabase() {
  std::string path = scratchPath("choices.db");
  std::remove(path.c_str());
  auto db = TuningDatabase::open(path, TuningDatabase::Mode::ReadWrite);
  std::string key = het::tune::allReduceWorkloadPrefix(2, 1, "shm");
  db->put(collectiveRecord(key, 4096, "tree"));
  db->put(collectiveRecord(key, 65536, "ps"));
  db->put(collectiveRecord(key, 1 << 20, "halving_doubling"));
  db->put(collectiveRecord(key, 16 << 20, "ring", "another CPU (avx2)"));          // another host
  db->put(collectiveRecord(het::tune::allReduceWorkloadPrefix(4, 1, "shm"), 4096, "ring")); // 4 ranks
  return path;
}

int checkPicks(hetcclComm_t comm, const std::vector<std::pair<size_t, hetcclAlgo_t>>& expected) {
  for (auto [bytes, want] : expected) {
    hetcclAlgo_t got;
    RCALL(hetcclCommPickAlgorithm(comm, bytes, &got));
    RCHECK(got == want, "%zu bytes: picked %s, expected %s", bytes, hetcclAlgoName(got), hetcclAlgoName(want));
  }
  return 0;
}

} // namespace

TEST(Tuned, AutoTakesTheNearestRecordOfThisKeyAndHostAndStaysExact) {
  std::string path = writeDatabase();
  setenv("HETCCL_TUNING_DB", path.c_str(), 1);
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t comm = initRank(rank, n, id, 30000);
    RCHECK(comm, "init");
    char key[128];
    RCALL(hetcclCommTuningKey(comm, key, sizeof key));
    RCHECK(std::string(key) == "allreduce ranks=2 nodes=1 link=shm bytes=", "key %s", key);
    // 4 KiB and 64 KiB meet at 16 KiB (their geometric mean), 64 KiB and
    // 1 MiB at 256 KiB; beyond the last record its choice holds (the other
    // host's 16 MiB record does not count).
    if (checkPicks(comm, {{64, hetcclAlgoTree},
                          {4096, hetcclAlgoTree},
                          {16384, hetcclAlgoTree},
                          {16388, hetcclAlgoParameterServer},
                          {65536, hetcclAlgoParameterServer},
                          {262144, hetcclAlgoParameterServer},
                          {262148, hetcclAlgoHalvingDoubling},
                          {64 << 20, hetcclAlgoHalvingDoubling}}))
      return 1;
    for (size_t count : {size_t(1000), size_t(16384), size_t(300000)}) {
      std::vector<float> buf(count);
      for (size_t i = 0; i < count; ++i) buf[i] = float(rank + 1) * float(i % 100);
      RCALL(hetcclAllReduce(buf.data(), buf.data(), count, hetcclFloat32, hetcclSum, comm));
      for (size_t i = 0; i < count; ++i)
        RCHECK(buf[i] == 3.0f * float(i % 100), "count %zu element %zu is %g", count, i, double(buf[i]));
    }
    RCALL(hetcclCommDestroy(comm));
    return 0;
  });
  unsetenv("HETCCL_TUNING_DB");
  std::remove(path.c_str());
  EXPECT_TRUE(allOk(r));
}

// Rank 0 reads the file and the bootstrap gives its table to everyone: a
// rank whose HETCCL_TUNING_DB names nothing (or another file) still agrees.
TEST(Tuned, EveryRankTakesRankZerosTable) {
  std::string path = writeDatabase();
  auto r = runRanks(2, [path](int rank, int n, const hetcclUniqueId& id) {
    setenv("HETCCL_TUNING_DB", rank == 0 ? path.c_str() : "/nonexistent/tune.db", 1);
    hetcclComm_t comm = initRank(rank, n, id, 30000);
    RCHECK(comm, "init");
    if (checkPicks(comm, {{4096, hetcclAlgoTree}, {65536, hetcclAlgoParameterServer}})) return 1;
    RCALL(hetcclCommDestroy(comm));
    return 0;
  });
  std::remove(path.c_str());
  EXPECT_TRUE(allOk(r));
}

// A damaged file, another program's SQLite file and a missing one: auto
// picks exactly as with no database (each case warns on stderr; the lit test
// test/tune/errors.test checks the words).
TEST(Tuned, UnusableDatabasesLeaveAutoUntuned) {
  std::string garbage = scratchPath("garbage.db");
  {
    std::ofstream out(garbage);
    out << "this is not an SQLite database, just text long enough to look like a header.....";
  }
  for (std::string file : {garbage, std::string("/nonexistent/tune.db")}) {
    auto r = runRanks(2, [file](int rank, int n, const hetcclUniqueId& id) {
      std::vector<hetcclAlgo_t> untuned, tuned;
      const size_t sizes[] = {4096, 65536, 1 << 20, 64 << 20};
      unsetenv("HETCCL_TUNING_DB");
      hetcclComm_t comm = initRank(rank, n, id, 30000);
      RCHECK(comm, "init");
      for (size_t bytes : sizes) {
        hetcclAlgo_t a;
        RCALL(hetcclCommPickAlgorithm(comm, bytes, &a));
        untuned.push_back(a);
      }
      // A second communicator, split from the first, with the file set.
      setenv("HETCCL_TUNING_DB", file.c_str(), 1);
      hetcclComm_t other;
      RCALL(hetcclCommSplit(comm, 0, rank, &other, nullptr));
      for (size_t i = 0; i < 4; ++i) {
        hetcclAlgo_t a;
        RCALL(hetcclCommPickAlgorithm(other, sizes[i], &a));
        RCHECK(a == untuned[i], "%s: %zu bytes picked %s, untuned %s", file.c_str(), sizes[i], hetcclAlgoName(a),
               hetcclAlgoName(untuned[i]));
      }
      RCALL(hetcclCommDestroy(other));
      RCALL(hetcclCommDestroy(comm));
      return 0;
    });
    EXPECT_TRUE(allOk(r)) << file;
  }
  std::remove(garbage.c_str());
}

// oneshot as a set algorithm: one-shot where the board holds the message,
// else what auto picks; exact either way.
TEST(Tuned, SetOneShotRunsOneShotOnlyWithinTheBoard) {
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t comm = initRank(rank, n, id, 30000);
    RCHECK(comm, "init");
    RCALL(hetcclCommSetAlgorithm(comm, hetcclAlgoOneShot));
    hetcclAlgo_t small, large;
    RCALL(hetcclCommPickAlgorithm(comm, 4096, &small));
    RCALL(hetcclCommPickAlgorithm(comm, 64 << 20, &large));
    RCHECK(small == hetcclAlgoOneShot, "4 KiB: %s", hetcclAlgoName(small));
    RCHECK(large != hetcclAlgoOneShot && large != hetcclAlgoAuto, "64 MiB: %s", hetcclAlgoName(large));
    hetcclAlgo_t parsed;
    RCALL(hetcclAlgoFromName("oneshot", &parsed));
    RCHECK(parsed == hetcclAlgoOneShot, "parsed %s", hetcclAlgoName(parsed));
    for (size_t count : {size_t(1024), size_t(4 << 20)}) {
      std::vector<float> buf(count, float(rank + 1));
      RCALL(hetcclAllReduce(buf.data(), buf.data(), count, hetcclFloat32, hetcclSum, comm));
      for (size_t i = 0; i < count; ++i) RCHECK(buf[i] == 3.0f, "count %zu element %zu", count, i);
    }
    RCALL(hetcclCommDestroy(comm));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}
