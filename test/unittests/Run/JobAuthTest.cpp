// The job token and the control plane's authentication (lib/Run): signed
// requests accepted once and only with the job's token, within the clock
// window; sealed channel messages that cannot be altered, replayed or
// reflected; token files only their owner may read.
#include "het/Run/ChannelAuth.h"
#include "het/Run/JobToken.h"
#include "het/Run/RequestSignature.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace het::run;

namespace {
const std::string kToken = "0123456789abcdef0123456789abcdef";
const std::multimap<std::string, std::string> kAdmit{{"group", "mlir"}};
constexpr int64_t kNow = 1796000000;

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/" + name + "-" + std::to_string(::getpid());
}
} // namespace

TEST(RequestSignature, AcceptsTheJobsSignatureOnce) {
  RequestVerifier verifier(kToken);
  std::string header =
      signRequest(kToken, "POST", "/admit", kAdmit, kNow, "00112233445566778899aabbccddeeff");
  EXPECT_TRUE(verifier.verifySigned("POST", "/admit", kAdmit, header, kNow + 5).ok());
  Verdict replay = verifier.verifySigned("POST", "/admit", kAdmit, header, kNow + 6);
  EXPECT_EQ(replay.status, 403);
  EXPECT_NE(replay.reason.find("replayed"), std::string::npos) << replay.reason;
}

TEST(RequestSignature, RefusesMissingWrongAlteredAndStaleRequests) {
  RequestVerifier verifier(kToken);
  Verdict none = verifier.verifySigned("POST", "/admit", kAdmit, "", kNow);
  EXPECT_EQ(none.status, 401);
  std::string nonce = "ffeeddccbbaa99887766554433221100";
  std::string wrong =
      signRequest("another-token-of-some-length", "POST", "/admit", kAdmit, kNow, nonce);
  EXPECT_EQ(verifier.verifySigned("POST", "/admit", kAdmit, wrong, kNow).status, 403);
  std::string right = signRequest(kToken, "POST", "/admit", kAdmit, kNow, nonce);
  // Another group, another path or another method than the one signed.
  EXPECT_EQ(verifier.verifySigned("POST", "/admit", {{"group", "onednn"}}, right, kNow).status,
            403);
  EXPECT_EQ(verifier.verifySigned("POST", "/stop", kAdmit, right, kNow).status, 403);
  EXPECT_EQ(verifier.verifySigned("GET", "/admit", kAdmit, right, kNow).status, 403);
  // Signed two minutes ago, or in the future: stale either way.
  Verdict stale = verifier.verifySigned("POST", "/admit", kAdmit, right, kNow + 120);
  EXPECT_EQ(stale.status, 403);
  EXPECT_NE(stale.reason.find("stale"), std::string::npos) << stale.reason;
  EXPECT_EQ(verifier.verifySigned("POST", "/admit", kAdmit, right, kNow - 120).status, 403);
  EXPECT_EQ(verifier.verifySigned("POST", "/admit", kAdmit, "t=1, n=xyz", kNow).status, 403);
  // None of the refused ones used the nonce up.
  EXPECT_TRUE(verifier.verifySigned("POST", "/admit", kAdmit, right, kNow).ok());
}

TEST(RequestSignature, ReadersMayShowTheTokenAsBearer) {
  RequestVerifier verifier(kToken);
  EXPECT_TRUE(verifier.verifyReader("GET", "/status", {}, "", "Bearer " + kToken, kNow).ok());
  EXPECT_EQ(verifier.verifyReader("GET", "/status", {}, "", "Bearer nope", kNow).status, 403);
  EXPECT_EQ(verifier.verifyReader("GET", "/status", {}, "", "", kNow).status, 401);
  EXPECT_EQ(verifier.verifyReader("GET", "/status", {}, "", kToken, kNow).status, 403);
}

TEST(ChannelAuth, SealedMessagesOpenInOrderOnTheOtherSideOnly) {
  std::string key = sessionKey(kToken, "nonce-of-the-coordinator", "nonce-of-the-agent");
  MessageSeal coordinator(key, true), agent(key, false);
  std::string first = coordinator.seal(R"({"welcome":"agent 0"})");
  std::string second = coordinator.seal(R"({"start":{}})");
  std::string json, error;
  // Reordered, then in order.
  EXPECT_FALSE(agent.open(second, json, error));
  EXPECT_NE(error.find("replayed or reordered"), std::string::npos) << error;
  ASSERT_TRUE(agent.open(first, json, error)) << error;
  EXPECT_EQ(json, R"({"welcome":"agent 0"})");
  ASSERT_TRUE(agent.open(second, json, error)) << error;
  // Replayed.
  EXPECT_FALSE(agent.open(second, json, error));
  // Altered.
  MessageSeal agent2(key, false);
  std::string altered = first;
  altered.replace(altered.find("agent 0"), 7, "agent 9");
  EXPECT_FALSE(agent2.open(altered, json, error));
  EXPECT_NE(error.find("does not match"), std::string::npos) << error;
  // Reflected: the agent's own message back to it.
  MessageSeal agent3(key, false), agent4(key, false);
  EXPECT_FALSE(agent4.open(agent3.seal(R"({"done":{}})"), json, error));
  // Unsealed (a peer without the key).
  EXPECT_FALSE(agent2.open(R"({"start":{}})", json, error));
  // Another token: another key.
  MessageSeal impostor(
      sessionKey("not-the-job-token-at-all", "nonce-of-the-coordinator", "nonce-of-the-agent"),
      true);
  MessageSeal agent5(key, false);
  EXPECT_FALSE(agent5.open(impostor.seal(R"({"welcome":"x"})"), json, error));
}

TEST(ChannelAuth, ProofsBindTheNoncesAndTheHello) {
  std::string p = agentProof(kToken, "c", "a", "mlir", "node-b", 4000);
  EXPECT_EQ(p, agentProof(kToken, "c", "a", "mlir", "node-b", 4000));
  EXPECT_NE(p, agentProof(kToken, "c2", "a", "mlir", "node-b", 4000));
  EXPECT_NE(p, agentProof(kToken, "c", "a", "onednn", "node-b", 4000));
  EXPECT_NE(p, agentProof(kToken, "c", "a", "mlir", "node-b", 4001));
  EXPECT_NE(attemptToken(kToken, 0, "10.0.0.1:4000"), attemptToken(kToken, 1, "10.0.0.1:4000"));
}

TEST(JobToken, TokenFilesAreTheOwnersOnly) {
  std::string path = tempPath("token");
  ::unlink(path.c_str());
  std::string token = generateToken();
  EXPECT_EQ(token.size(), 64u);
  writeTokenFile(path, token);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(readTokenFile(path), token);
  // Never replaced.
  EXPECT_THROW(writeTokenFile(path, generateToken()), std::runtime_error);
  // Readable by others: refused, naming the fix.
  ::chmod(path.c_str(), 0644);
  try {
    readTokenFile(path);
    ADD_FAILURE() << "a world-readable token file was read";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
  }
  ::unlink(path.c_str());
  EXPECT_THROW(readTokenFile(path), std::runtime_error);
  EXPECT_THROW(checkToken("short", "test"), std::invalid_argument);
  EXPECT_THROW(checkToken("has a space in it, long enough", "test"), std::invalid_argument);
}

TEST(JobToken, ResolvedFromTheEnvironmentThenTheFileThenGenerated) {
  std::string path = tempPath("resolve");
  ::unlink(path.c_str());
  ::unsetenv("HETCCL_TOKEN");
  EXPECT_THROW(resolveJobToken(path, false, "het-run --admit"), std::runtime_error);
  JobToken made = resolveJobToken(path, true, "job");
  EXPECT_TRUE(made.generated);
  EXPECT_EQ(resolveJobToken(path, false, "het-run --admit").value, made.value);
  ::setenv("HETCCL_TOKEN", kToken.c_str(), 1);
  EXPECT_EQ(resolveJobToken(path, false, "het-run --admit").value, kToken);
  ::setenv("HETCCL_TOKEN", "short", 1);
  EXPECT_THROW(resolveJobToken(path, false, "het-run --admit"), std::runtime_error);
  ::unsetenv("HETCCL_TOKEN");
  ::unlink(path.c_str());
}
