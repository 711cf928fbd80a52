//===- Agent.cpp - het-run --join: one node's ranks of a coordinated job --===//
#include "Agent.h"
#include "AgentChannel.h"
#include "Metrics.h"
#include "Supervisor.h"

#include "het/Run/JobToken.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <optional>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace hetrun {

namespace {
std::string hostName() {
  if (const char *h = std::getenv("HETCCL_HOST"); h && *h)
    return h;
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

nlohmann::json fatesJson(const JobResult &r, const JobOptions &o) {
  nlohmann::json fates = nlohmann::json::array();
  for (size_t k = 0; k < r.fates.size(); ++k) {
    const RankFate &f = r.fates[k];
    fates.push_back({{"rank", o.globalRank(static_cast<int>(k))},
                     {"exited", f.exited},
                     {"status", f.status},
                     {"signal", f.signal},
                     {"killed_by_us", f.killedByUs},
                     {"seconds", f.seconds}});
  }
  return fates;
}
/// The job options of a start order; throws on a field missing or of
/// another type.
void readStart(const nlohmann::json &s, const std::string &workDir, const std::string &jobToken,
               JobOptions &o) {
  o.attempt = s.at("attempt").get<int>();
  o.ranks = s.at("ranks").get<std::vector<int>>();
  o.nranks = static_cast<int>(o.ranks.size());
  o.worldSize = s.at("world").get<int>();
  o.root = s.at("root").get<std::string>();
  o.token = het::run::attemptToken(jobToken, o.attempt, o.root);
  o.argv = s.at("args").get<std::vector<std::string>>();
  std::string program = s.at("program").get<std::string>();
  if (program.empty() || program.find('/') != std::string::npos)
    throw std::runtime_error("bad program name '" + program + "'");
  o.argv.insert(o.argv.begin(), workDir + "/" + program);
  o.collectiveTimeoutMs = s.value("timeout_ms", int64_t(0));
  o.bindToCores = s.value("bind_to_cores", true);
  o.jobTimeoutS = s.value("job_timeout_s", 0.0);
  // The coordinator's failure policy (one for the job); `o`'s, the agent's
  // own flags, only for a coordinator that sends none.
  o.failWaitMs = s.value("fail_wait_ms", o.failWaitMs);
  o.graceMs = s.value("grace_ms", o.graceMs);
  const nlohmann::json env = s.contains("env") ? s["env"] : nlohmann::json::object();
  for (auto it = env.begin(); it != env.end(); ++it)
    o.env.push_back({it.key(), it.value().get<std::string>()});
  const nlohmann::json rankEnv = s.contains("rank_env") ? s["rank_env"] : nlohmann::json::array();
  for (const nlohmann::json &e : rankEnv) {
    std::vector<std::pair<std::string, std::string>> vars;
    for (auto it = e.begin(); it != e.end(); ++it)
      vars.push_back({it.key(), it.value().get<std::string>()});
    o.rankEnv.push_back(vars);
  }
  if (o.nranks < 1 || o.worldSize < o.nranks)
    throw std::runtime_error("ranks do not fit the world");
}
} // namespace

int runAgent(const AgentOptions &a) {
  std::unique_ptr<AgentChannel> channel;
  try {
    channel = AgentChannel::connect(a.coordinator, a.joinTimeoutS);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "het-run: --join: %s\n", e.what());
    return 1;
  }
  std::string workDir = a.workDir;
  if (workDir.empty()) {
    char tmpl[] = "/tmp/het-agent-XXXXXX";
    if (!::mkdtemp(tmpl)) {
      std::fprintf(stderr, "het-run: --join: cannot make a work directory: %s\n", std::strerror(errno));
      return 1;
    }
    workDir = tmpl;
  }
  std::unique_ptr<JobMetrics> metrics;
  try {
    metrics = std::make_unique<JobMetrics>(a.metricsLog, 0);
    if (a.metricsPort >= 0) {
      int port = metrics->serve(a.metricsAddress, a.metricsPort, a.token, a.consoleAuth);
      std::fprintf(stderr, "het-run: metrics at http://%s:%d/metrics, status at /status\n",
                   a.metricsAddress.c_str(), port);
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "het-run: %s\n", e.what());
    return 1;
  }
  std::string host = hostName();
  // The port this agent offers the coordinator for the job's root, held
  // listening (on the address the coordinator sees) until rank 0 takes the
  // socket over: one merely found free could be taken before rank 0 binds.
  std::optional<RootListener> offered;
  std::string offeredRoot; // host:port of `offered`, as a start order names the root
  auto offerPort = [&]() -> int {
    offered.reset();
    std::string address = channel->localAddress();
    try {
      offered.emplace(address);
    } catch (const std::exception &) {
      address = "127.0.0.1"; // not IPv4 (hetccl's root must be): loopback's port, not held there
      offered.emplace(address);
    }
    offeredRoot = address + ":" + std::to_string(offered->port());
    return offered->port();
  };
  // Both prove the job token before anything else (AgentChannel.h); the
  // token itself is never sent.
  nlohmann::json reply;
  try {
    reply = channel->answerChallenge(
        a.token, {{"group", a.group}, {"host", host}, {"free_port", offerPort()}},
        a.peerTimeoutS);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "het-run: --join: the coordinator at %s %s\n", a.coordinator.c_str(), e.what());
    return 1;
  }
  auto text = [](const nlohmann::json &j, const char *key) {
    return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                  : std::string();
  };
  // The coordinator shows every rank of the job (/metrics, /status).
  AgentChannel *relay = channel.get();
  metrics->forwardLines([relay](const std::string &line) { relay->send({{"metrics", line}}); });
  std::fprintf(stderr, "het-run: joined the job coordinated at %s as an agent of group '%s' (%s)\n",
               a.coordinator.c_str(), a.group.c_str(), text(reply, "welcome").c_str());
  std::fflush(stderr);

  // The reader: orders that act during an attempt (stop, stop after a
  // checkpoint) take effect at once; the others wait for the main thread.
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<nlohmann::json> orders;
  std::atomic<int> stopAttempt{-1}, checkpointAttempt{-1};
  std::string stopReason;
  bool gone = false;
  std::string lostWhy; // why the coordinator's channel ended, if not a close
  std::thread reader([&] {
    for (;;) {
      nlohmann::json m;
      bool timedOut = false;
      if (!channel->receive(m, a.peerTimeoutS, &timedOut)) {
        lostWhy = timedOut ? "the coordinator sent nothing for " +
                                 std::to_string(static_cast<int>(a.peerTimeoutS)) +
                                 " s (stalled, or cut off)"
                           : channel->error();
        break;
      }
      if (m.contains("ping"))
        continue;
      try {
        if (m.contains("program")) {
          std::string name = m["program"].at("name").get<std::string>(), bytes;
          size_t size = m["program"].at("bytes").get<size_t>();
          std::string digest = m["program"].at("sha256").get<std::string>();
          if (name.empty() || name.find('/') != std::string::npos) {
            lostWhy = "an executable named '" + name + "' (not a plain file name)";
            break;
          }
          if (!channel->receiveBytes(size, bytes, a.peerTimeoutS)) {
            lostWhy = "the executable " + name + " did not arrive whole: " + channel->error();
            break; // the stream cannot be followed any more
          }
          // Run only what the coordinator announced (in a sealed message).
          if (std::string got = het::run::sha256Hex(bytes); got != digest) {
            lostWhy = "the executable " + name + " arrived with SHA-256 " + got +
                      ", not the " + digest + " the coordinator announced; not written";
            break;
          }
          // Written aside and renamed: a rank never executes half a file.
          std::string path = workDir + "/" + name, part = path + ".part";
          std::ofstream out(part, std::ios::binary | std::ios::trunc);
          out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
          out.close();
          if (!out || ::chmod(part.c_str(), 0755) != 0 || ::rename(part.c_str(), path.c_str()) != 0)
            std::fprintf(stderr, "het-run: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
          continue;
        }
        std::lock_guard<std::mutex> lock(mutex);
        if (m.contains("stop")) {
          stopReason = m["stop"].value("reason", "stopped by the coordinator");
          stopAttempt = m["stop"].at("attempt").get<int>();
        } else if (m.contains("checkpoint_stop")) {
          checkpointAttempt = m["checkpoint_stop"].at("attempt").get<int>();
        } else {
          orders.push_back(m);
        }
        cv.notify_all();
      } catch (const nlohmann::json::exception &e) {
        std::fprintf(stderr, "het-run: --join: ignored a message that cannot be read: %s\n", e.what());
      }
    }
    std::lock_guard<std::mutex> lock(mutex);
    gone = true;
    stopReason = lostWhy.empty() ? "the coordinator is gone" : lostWhy;
    cv.notify_all();
  });
  // Say something every quarter of the peer timeout: the coordinator takes
  // an agent silent for the whole timeout for gone.
  std::thread pinger([&] {
    std::unique_lock<std::mutex> lock(mutex);
    while (!gone && !cv.wait_for(lock, std::chrono::duration<double>(a.peerTimeoutS / 4),
                                 [&] { return gone; })) {
      lock.unlock();
      channel->send({{"ping", nlohmann::json::object()}});
      lock.lock();
    }
  });

  int status = 1;
  for (;;) {
    nlohmann::json order;
    {
      std::unique_lock<std::mutex> lock(mutex);
      // A signal to het-run does not notify: look every 100 ms.
      while (!cv.wait_for(lock, std::chrono::milliseconds(100),
                          [&] { return gone || !orders.empty() || stopSignal(); })) {
      }
      if (orders.empty()) {
        std::fprintf(stderr, "het-run: %s\n",
                     stopSignal() ? "interrupted"
                                  : (stopReason + "; stopping (coordinator " + a.coordinator + ")").c_str());
        status = stopSignal() ? 128 + stopSignal() : 1;
        break;
      }
      order = orders.front();
      orders.pop_front();
    }
    if (order.contains("quit")) {
      const nlohmann::json &q = order["quit"];
      status = q.is_object() && q.contains("status") && q["status"].is_number_integer()
                   ? q["status"].get<int>()
                   : 1;
      std::fprintf(stderr, "het-run: the coordinator ends this agent: %s\n", text(q, "reason").c_str());
      break;
    }
    if (!order.contains("start"))
      continue;
    const nlohmann::json &s = order["start"];
    JobOptions o;
    o.failWaitMs = a.failWaitMs;
    o.graceMs = a.graceMs;
    try {
      readStart(s, workDir, a.token, o);
    } catch (const std::exception &e) {
      // Not a coordinator of this version: say so rather than guess.
      std::fprintf(stderr, "het-run: --join: a start order that cannot be read: %s\n", e.what());
      nlohmann::json attempt = s.is_object() && s.contains("attempt") ? s["attempt"] : nlohmann::json(-1);
      channel->send({{"done", {{"attempt", attempt}, {"ok", false},
                               {"cause", std::string("the agent cannot read its start order: ") + e.what()},
                               {"failed_rank", -1}, {"fates", nlohmann::json::array()}}}});
      continue;
    }
    // The root is the port this agent offered: its rank 0 gets the socket.
    if (offered && o.root == offeredRoot)
      o.rootListenFd = offered->fd();
    o.env.push_back(metrics->rankEnvironment());
    std::vector<std::string> groups;
    for (const auto &vars : o.rankEnv) {
      std::string group;
      for (const auto &[k, v] : vars)
        if (k == "HET_DEVICE_GROUP")
          group = v;
      groups.push_back(group);
    }
    int attempt = o.attempt;
    o.stopAtCheckpoint = [&] { return checkpointAttempt.load() == attempt; };
    o.abort = [&]() -> std::string {
      std::lock_guard<std::mutex> lock(mutex);
      return stopAttempt.load() == attempt || gone ? stopReason : "";
    };
    metrics->beginAttempt(attempt, o.ranks, groups);
    JobResult r;
    try {
      r = runJob(o);
    } catch (const std::exception &e) {
      r.ok = false;
      r.cause = e.what();
    }
    metrics->endAttempt(r);
    nlohmann::json done = {{"attempt", attempt},
                           {"ok", r.ok},
                           {"cause", r.cause},
                           {"failed_rank", r.failedRank},
                           {"resumed_step", r.resumedStep},
                           {"stopped_step", r.stoppedStep},
                           {"last_step", metrics->lastStep()},
                           {"seconds", r.seconds},
                           {"fates", fatesJson(r, o)},
                           {"free_port", offerPort()}};
    if (int sig = stopSignal()) {
      // SIGTERM to the agent (a node drained, a pod evicted): its devices
      // leave the job; say so rather than report ranks stopped on purpose.
      done["leaving"] = true;
      done["cause"] = "het-run received signal " + std::to_string(sig);
    }
    if (!channel->send({{"done", done}}))
      std::fprintf(stderr, "het-run: could not report attempt %d: the coordinator is gone\n", attempt);
  }
  metrics->forwardLines(nullptr);
  channel->shutdown();
  reader.join();
  {
    std::lock_guard<std::mutex> lock(mutex);
    gone = true;
  }
  cv.notify_all();
  pinger.join();
  return status;
}

} // namespace hetrun
