//===- CheckpointTest.cpp - round trips, increments, corruption, crashes --===//
//
// Real files in a fresh temp directory per test; the crash test forks a
// child that writes checkpoints in a loop and SIGKILLs it mid-write.
//
#include "het/Checkpoint/Checkpointer.h"
#include "het/Checkpoint/Hash.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace het::ckpt;

namespace {

class TempDir {
public:
  TempDir() {
    char tmpl[] = "/tmp/het-ckpt-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string path;
};

Snapshot makeState(int step, size_t n = 1000) {
  Snapshot s;
  std::vector<float> w(n), m(n);
  for (size_t i = 0; i < n; ++i) {
    w[i] = float(i) * 0.5f + float(step);
    m[i] = float(step) * 0.25f - float(i);
  }
  std::vector<int64_t> frozen(n / 2);
  for (size_t i = 0; i < frozen.size(); ++i) frozen[i] = int64_t(i * i);
  int64_t st = step;
  s.put("w", "f32", w.data(), n, {int64_t(n / 10), 10});
  s.put("momentum", "f32", m.data(), n);
  s.put("frozen", "i64", frozen.data(), frozen.size());
  s.put("step", "i64", &st, 1);
  return s;
}

void expectEqual(const Snapshot &a, const Snapshot &b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (auto &[name, t] : a.tensors) {
    const Tensor &u = b.at(name);
    EXPECT_EQ(t.dtype, u.dtype) << name;
    EXPECT_EQ(t.shape, u.shape) << name;
    EXPECT_EQ(t.bytes, u.bytes) << name;
  }
}

std::string stepFile(const std::string &dir, int step, const char *ext) {
  char b[64];
  std::snprintf(b, sizeof b, "/step-%09d.%s", step, ext);
  return dir + b;
}

void flipByte(const std::string &path, long offset) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char c;
  ASSERT_EQ(::pread(fd, &c, 1, offset), 1);
  c ^= 0x5a;
  ASSERT_EQ(::pwrite(fd, &c, 1, offset), 1);
  ::close(fd);
}

} // namespace

TEST(Checkpoint, RoundTripFull) {
  TempDir d;
  Snapshot s = makeState(3);
  SaveInfo info = writeCheckpoint(d.path, 3, s);
  EXPECT_TRUE(info.full);
  EXPECT_EQ(info.tensorsStored, 4u);
  bool full = false;
  Snapshot back = loadCheckpoint(d.path, 3, &full);
  EXPECT_TRUE(full);
  expectEqual(s, back);
  ResumeResult r = resumeLatest(d.path);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.step, 3);
  EXPECT_TRUE(r.skipped.empty());
}

TEST(Checkpoint, EmptyDirectoryResumesNothing) {
  TempDir d;
  ResumeResult r = resumeLatest(d.path);
  EXPECT_FALSE(r.found);
  EXPECT_FALSE(resumeLatest(d.path + "/does-not-exist").found);
}

TEST(Checkpoint, BadInputIsAClearError) {
  TempDir d;
  Snapshot s;
  s.tensors["x"].dtype = "f32";
  s.tensors["x"].shape = {3};
  s.tensors["x"].bytes.resize(8);
  try {
    writeCheckpoint(d.path, 1, s);
    FAIL() << "no error";
  } catch (const CheckpointError &e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'x' holds 8 bytes"), std::string::npos) << e.what();
  }
  s.tensors["x"].dtype = "complex";
  EXPECT_THROW(writeCheckpoint(d.path, 1, s), CheckpointError);
  EXPECT_THROW(writeCheckpoint(d.path, -1, makeState(0)), CheckpointError);
}

TEST(Checkpoint, ShardsAndMetaRoundTripThroughIncrements) {
  TempDir d;
  Snapshot s = makeState(1);
  s.tensors["w"].shard = {1, 10, 20, {100, 30}}; // columns 10..20 of a [100, 30]
  s.meta = {{"layout", "abc"}, {"writers", "0,1"}};
  writeCheckpoint(d.path, 1, s, -1, nullptr, nullptr);
  HashMap hashes;
  writeCheckpoint(d.path, 2, s, -1, nullptr, &hashes);
  writeCheckpoint(d.path, 3, s, 2, &hashes); // w is stored only in step 2
  for (int step : {1, 3}) {
    Snapshot back = loadCheckpoint(d.path, step);
    expectEqual(s, back);
    const Shard &shard = back.at("w").shard;
    EXPECT_EQ(shard.axis, 1);
    EXPECT_EQ(shard.begin, 10);
    EXPECT_EQ(shard.end, 20);
    EXPECT_EQ(shard.whole, (std::vector<int64_t>{100, 30}));
    EXPECT_FALSE(back.at("momentum").shard.present());
    EXPECT_EQ(back.meta, s.meta);
    // The manifest alone describes the same, without the bytes.
    Snapshot described = describeCheckpoint(d.path, step);
    EXPECT_EQ(described.at("w").shard.end, 20);
    EXPECT_TRUE(described.at("w").bytes.empty());
    EXPECT_EQ(described.meta, s.meta);
  }
}

TEST(Checkpoint, ShardOutsideItsWholeTensorIsAClearError) {
  TempDir d;
  Snapshot s = makeState(1);
  s.tensors["w"].shard = {1, 25, 35, {100, 30}};
  try {
    writeCheckpoint(d.path, 1, s);
    FAIL() << "no error";
  } catch (const CheckpointError &e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'w' does not fit its shard (indices 25..35 of axis 1"),
              std::string::npos)
        << e.what();
  }
  s.tensors["w"].shard = {0, 0, 10, {100, 30}}; // its rows are 100, the shard says 10
  EXPECT_THROW(writeCheckpoint(d.path, 1, s), CheckpointError);
}

TEST(Checkpoint, ABlockOfRowsOfAShardRoundTrips) {
  TempDir d;
  Snapshot s = makeState(1); // w is [100, 10]
  // Columns 10..20 of a [300, 30], rows 100..200 of them (a replica's block
  // of a tensor-parallel part: ZeRO under tensor parallelism).
  s.tensors["w"].shard = {1, 10, 20, {300, 30}, 100, 200};
  writeCheckpoint(d.path, 1, s);
  const Shard &shard = loadCheckpoint(d.path, 1).at("w").shard;
  EXPECT_EQ(shard.axis, 1);
  EXPECT_EQ(shard.rowBegin, 100);
  EXPECT_EQ(shard.rowEnd, 200);
  EXPECT_EQ(describeCheckpoint(d.path, 1).at("w").shard.rowEnd, 200);
  // Rows that are not the tensor's, or past the whole's: clear errors.
  s.tensors["w"].shard = {1, 10, 20, {300, 30}, 100, 150};
  try {
    writeCheckpoint(d.path, 2, s);
    FAIL() << "no error";
  } catch (const CheckpointError &e) {
    EXPECT_NE(std::string(e.what()).find("indices 10..20 of axis 1, rows 100..150"),
              std::string::npos)
        << e.what();
  }
  s.tensors["w"].shard = {1, 10, 20, {150, 30}, 100, 200};
  EXPECT_THROW(writeCheckpoint(d.path, 2, s), CheckpointError);
}

TEST(Checkpoint, IncrementalStoresOnlyChangedTensors) {
  TempDir d;
  Checkpointer c({d.path, /*async=*/false, /*fullEvery=*/3});
  for (int step = 0; step < 7; ++step) c.save(step, makeState(step));
  std::vector<SaveInfo> done = c.completed();
  ASSERT_EQ(done.size(), 7u);
  // Full at saves 0, 3, 6; increments refer to the last full one.
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(done[i].full, i % 3 == 0) << i;
    if (!done[i].full) {
      EXPECT_EQ(done[i].base, i / 3 * 3);
      EXPECT_EQ(done[i].tensorsReused, 1u) << "only 'frozen' is unchanged";
      EXPECT_EQ(done[i].tensorsStored, 3u);
      EXPECT_LT(done[i].bytesWritten, done[i / 3 * 3].bytesWritten);
    }
  }
  // Every step (full or increment composed with its full) restores exactly.
  for (int step = 0; step < 7; ++step) expectEqual(makeState(step), loadCheckpoint(d.path, step));
  ResumeResult r = resumeLatest(d.path);
  EXPECT_EQ(r.step, 6);
  r = resumeLatest(d.path, 5);
  EXPECT_EQ(r.step, 5);
  EXPECT_FALSE(r.full);
  EXPECT_EQ(r.base, 3);
  expectEqual(makeState(5), r.snapshot);
}

TEST(Checkpoint, TruncatedNewestIsSkipped) {
  TempDir d;
  Checkpointer c({d.path, false, 2});
  for (int step = 1; step <= 3; ++step) c.save(step * 10, makeState(step));
  std::string bin = stepFile(d.path, 30, "bin");
  struct stat st;
  ASSERT_EQ(::stat(bin.c_str(), &st), 0);
  ASSERT_EQ(::truncate(bin.c_str(), st.st_size / 2), 0);
  ResumeResult r = resumeLatest(d.path);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.step, 20);
  expectEqual(makeState(2), r.snapshot);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].step, 30);
  EXPECT_NE(r.skipped[0].reason.find("truncated"), std::string::npos) << r.skipped[0].reason;
}

TEST(Checkpoint, CorruptedTensorByteIsSkipped) {
  TempDir d;
  Checkpointer c({d.path, false, 4});
  for (int step = 1; step <= 2; ++step) c.save(step, makeState(step));
  flipByte(stepFile(d.path, 2, "bin"), 100);
  ResumeResult r = resumeLatest(d.path);
  EXPECT_EQ(r.step, 1);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].reason.find("bad checksum"), std::string::npos) << r.skipped[0].reason;
  EXPECT_NE(r.report().find("skipped checkpoint step 2: bad checksum"), std::string::npos);
}

TEST(Checkpoint, CorruptedOrTruncatedManifestIsSkipped) {
  TempDir d;
  Checkpointer c({d.path, false, 1});
  for (int step = 1; step <= 3; ++step) c.save(step, makeState(step));
  // Edit a value inside the manifest: parses, but its checksum fails.
  std::string m3 = stepFile(d.path, 3, "json");
  std::ifstream in(m3);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  size_t pos = text.find("\"nbytes\": 8");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 11, "\"nbytes\": 4");
  std::ofstream(m3) << text;
  std::string m2 = stepFile(d.path, 2, "json");
  ASSERT_EQ(::truncate(m2.c_str(), 40), 0);
  ResumeResult r = resumeLatest(d.path);
  EXPECT_EQ(r.step, 1);
  ASSERT_EQ(r.skipped.size(), 2u);
  EXPECT_NE(r.skipped[0].reason.find("manifest sha256"), std::string::npos) << r.skipped[0].reason;
  EXPECT_NE(r.skipped[1].reason.find("not valid JSON"), std::string::npos) << r.skipped[1].reason;
}

TEST(Checkpoint, IncrementWithoutItsBaseIsSkipped) {
  TempDir d;
  Checkpointer c({d.path, false, 3});
  for (int step = 0; step < 5; ++step) c.save(step, makeState(step)); // full 0, 3; inc 1,2,4
  ASSERT_EQ(::unlink(stepFile(d.path, 3, "bin").c_str()), 0);
  ResumeResult r = resumeLatest(d.path);
  EXPECT_EQ(r.step, 2);
  ASSERT_EQ(r.skipped.size(), 2u);
  EXPECT_EQ(r.skipped[0].step, 4);
  EXPECT_NE(r.skipped[0].reason.find("missing or invalid base"), std::string::npos) << r.skipped[0].reason;
  EXPECT_EQ(r.skipped[1].step, 3);
  EXPECT_NE(r.skipped[1].reason.find("is missing"), std::string::npos) << r.skipped[1].reason;
  expectEqual(makeState(2), r.snapshot);
}

TEST(Checkpoint, AsyncWriterPersistsEverySnapshotInOrder) {
  TempDir d;
  {
    Checkpointer c({d.path, true, 4});
    // The loop mutates its own state right after each save: the writer owns
    // a copy, so what lands on disk is the state at the time of the call.
    Snapshot live = makeState(0, 20000);
    for (int step = 0; step < 20; ++step) {
      Snapshot copy = live;
      c.save(step, std::move(copy));
      live = makeState(step + 1, 20000);
    }
    c.wait();
    std::vector<SaveInfo> done = c.completed();
    ASSERT_EQ(done.size(), 20u);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(done[i].step, i);
  }
  for (int step = 0; step < 20; ++step)
    expectEqual(makeState(step, 20000), loadCheckpoint(d.path, step));
}

TEST(Checkpoint, AsyncSavesFromManyThreadsAreSerialised) {
  TempDir d;
  Checkpointer c({d.path, true, 2});
  std::atomic<int> next{0};
  std::vector<std::thread> ts;
  std::mutex order; // steps must reach save() in increasing order
  for (int k = 0; k < 4; ++k)
    ts.emplace_back([&] {
      for (;;) {
        std::lock_guard<std::mutex> lk(order);
        int step = next++;
        if (step >= 24) return;
        c.save(step, makeState(step));
      }
    });
  for (auto &t : ts) t.join();
  c.wait();
  EXPECT_EQ(c.completed().size(), 24u);
  for (int step = 0; step < 24; ++step) expectEqual(makeState(step), loadCheckpoint(d.path, step));
}

TEST(Checkpoint, AsyncErrorSurfacesOnTheNextCall) {
  TempDir d;
  std::string dir = d.path + "/sub";
  Checkpointer c({dir, true, 1});
  ASSERT_EQ(std::system(("rm -rf '" + dir + "' && touch '" + dir + "'").c_str()), 0);
  c.save(1, makeState(1));
  EXPECT_THROW(c.wait(), CheckpointError);
}

// A writer killed with SIGKILL at a random moment leaves only complete,
// valid checkpoints visible (temp files are invisible and cleaned later).
// At least one kill must land during a write (a temp file left behind),
// else the test would only have shown that finished files stay finished.
// Whether a kill lands mid-write is chance (1 run in 3 had none in 5 rounds
// on a 2-core VM): at least 5 rounds, then more until one does, at most 40.
TEST(Checkpoint, KilledWriterLeavesNoVisiblePartialCheckpoint) {
  int killedMidWrite = 0;
  for (int round = 0; round < 40 && (round < 5 || killedMidWrite == 0); ++round) {
    TempDir d;
    pid_t pid = ::fork();
    if (pid == 0) {
      Checkpointer c({d.path, round % 2 == 0, 3});
      for (int step = 0;; ++step) c.save(step, makeState(step, 200000));
    }
    ASSERT_GT(pid, 0);
    ::usleep(useconds_t(100000 + 70000 * (round % 5)));
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFSIGNALED(st));
    std::vector<int64_t> steps = listSteps(d.path);
    ASSERT_FALSE(steps.empty()) << "the child wrote nothing in time";
    // Every visible checkpoint verifies; nothing is skipped.
    for (int64_t s : steps) expectEqual(makeState(int(s), 200000), loadCheckpoint(d.path, s));
    ResumeResult r = resumeLatest(d.path);
    EXPECT_TRUE(r.skipped.empty()) << r.report();
    EXPECT_EQ(r.step, steps.back());
    // A new checkpointer sweeps the dead writer's temp files.
    std::string leftovers = "ls " + d.path + "/.tmp-* >/dev/null 2>&1";
    killedMidWrite += std::system(leftovers.c_str()) == 0;
    Checkpointer again({d.path, false, 1});
    EXPECT_NE(std::system(leftovers.c_str()), 0);
  }
  EXPECT_GT(killedMidWrite, 0) << "no kill landed during a write in 40 rounds";
}
