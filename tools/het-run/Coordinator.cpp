//===- Coordinator.cpp - het-run --elastic --coordinate: a job of agents --===//
#include "Coordinator.h"
#include "AgentChannel.h"
#include "Metrics.h"

#include "het/Plan/ClusterSurvivors.h"
#include "het/Run/JobToken.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace hetrun {

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// j[key] as a T, or `otherwise` when absent or of another type (agents'
/// reports are input: a bad one must not take the coordinator down).
template <typename T> T field(const nlohmann::json &j, const char *key, T otherwise) {
  if (!j.is_object() || !j.contains(key))
    return otherwise;
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception &) {
    return otherwise;
  }
}

std::string baseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
} // namespace

Coordinator::Coordinator(const nlohmann::json &spec, const het::plan::Cluster &original,
                         const std::string &address, int port, JobMetrics *metrics,
                         std::string token, double peerTimeoutS)
    : spec_(spec), token_(std::move(token)), peerTimeoutS_(peerTimeoutS), metrics_(metrics) {
  for (const auto &g : original.groups) {
    perNode_[g.name] = g.devicesPerNode;
    nodes_[g.name] = g.nodes;
    groupOrder_.push_back(g.name);
  }
  listener_ = std::make_unique<AgentListener>(address, port);
  acceptor_ = std::thread([this] { acceptLoop(); });
  pinger_ = std::thread([this] { pingLoop(); });
}

Coordinator::~Coordinator() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  acceptor_.join();
  changed_.notify_all();
  pinger_.join();
  listener_->close();
  for (auto &a : agents_)
    a->channel->shutdown();
  for (auto &a : agents_)
    if (a->reader.joinable())
      a->reader.join();
}

int Coordinator::port() const { return listener_->port(); }

int Coordinator::usable(const std::string &group) const {
  int n = 0;
  for (const auto &a : agents_)
    n += a->alive && a->group == group;
  return n;
}

void Coordinator::acceptLoop() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_)
        return;
    }
    std::unique_ptr<AgentChannel> channel = listener_->accept(0.2);
    if (!channel)
      continue;
    // Only agents that prove the job token join: they receive executables
    // and run them. The hello is awaited at most 5 s (a peer that connects
    // and says nothing holds up the next agent that long, no longer).
    std::string why;
    const nlohmann::json h = channel->offerChallenge(token_, 5.0, why);
    if (h.is_null()) {
      std::fprintf(stderr, "het-run: refused a connection from %s: %s\n",
                   channel->peerAddress().c_str(), why.c_str());
      std::fflush(stderr);
      continue;
    }
    auto text = [&](const char *key) {
      return h.contains(key) && h[key].is_string() ? h[key].get<std::string>() : std::string();
    };
    std::string group = text("group"), host = text("host");
    std::lock_guard<std::mutex> lock(mutex_);
    if (!nodes_.count(group)) {
      std::string groups;
      for (const std::string &g : groupOrder_)
        groups += (groups.empty() ? "" : ", ") + g;
      channel->send({{"refused", "the cluster has no group '" + group + "' (its groups: " + groups + ")"}});
      continue;
    }
    if (usable(group) >= nodes_[group]) {
      channel->send({{"refused", "group '" + group + "' has an agent for each of its " +
                                     std::to_string(nodes_[group]) + " node" +
                                     (nodes_[group] == 1 ? "" : "s")}});
      continue;
    }
    auto agent = std::make_unique<Agent>();
    agent->id = nextId_++;
    agent->group = group;
    agent->host = host;
    agent->address = channel->peerAddress();
    agent->freePort = h.contains("free_port") && h["free_port"].is_number_integer()
                          ? h["free_port"].get<int>()
                          : 0;
    agent->channel = std::move(channel);
    agent->channel->send({{"welcome", "agent " + std::to_string(agent->id) + ", " +
                                          std::to_string(perNode_[group]) + " device" +
                                          (perNode_[group] == 1 ? "" : "s")}});
    std::fprintf(stderr, "het-run: agent %d joined: group %s, host %s (%s), %d device%s\n",
                 agent->id, group.c_str(), host.c_str(), agent->address.c_str(), perNode_[group],
                 perNode_[group] == 1 ? "" : "s");
    std::fflush(stderr);
    Agent *a = agent.get();
    agents_.push_back(std::move(agent));
    a->reader = std::thread([this, a] { readLoop(a); });
    changed_.notify_all();
  }
}

void Coordinator::pingLoop() {
  // Each side says something at least every quarter of the peer timeout,
  // so silence for the whole timeout means a peer stalled or cut off.
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    changed_.wait_for(lock, std::chrono::duration<double>(peerTimeoutS_ / 4));
    std::vector<AgentChannel *> alive;
    for (const auto &a : agents_)
      if (a->alive)
        alive.push_back(a->channel.get());
    lock.unlock();
    for (AgentChannel *c : alive)
      c->send({{"ping", nlohmann::json::object()}});
    lock.lock();
  }
}

void Coordinator::readLoop(Agent *a) {
  std::string why;
  for (;;) {
    nlohmann::json m;
    bool timedOut = false;
    if (!a->channel->receive(m, peerTimeoutS_, &timedOut)) {
      why = timedOut ? "sent nothing for " + std::to_string(static_cast<int>(peerTimeoutS_)) +
                           " s (stalled)"
                     : a->channel->error();
      break;
    }
    if (m.contains("ping"))
      continue;
    if (m.contains("metrics") && m["metrics"].is_string()) {
      if (metrics_)
        metrics_->ingest(m["metrics"].get<std::string>());
      continue;
    }
    if (m.contains("done") && m["done"].is_object()) {
      std::lock_guard<std::mutex> lock(mutex_);
      a->result = m["done"];
      if (a->result.contains("free_port") && a->result["free_port"].is_number_integer())
        a->freePort = a->result["free_port"].get<int>();
      a->running = false;
      changed_.notify_all();
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (a->alive && !stopping_)
    std::fprintf(stderr, "het-run: agent %d (group %s, host %s) is gone%s%s\n", a->id,
                 a->group.c_str(), a->host.c_str(), why.empty() ? "" : ": ", why.c_str());
  if (a->alive && !stopping_)
    a->channel->shutdown(); // a stalled one hears no more of this job
  a->alive = false;
  changed_.notify_all();
}

bool Coordinator::waitForAgents(double timeoutS) {
  std::unique_lock<std::mutex> lock(mutex_);
  double until = now() + timeoutS;
  for (;;) {
    bool all = true;
    for (const auto &[g, n] : nodes_)
      all = all && usable(g) >= n;
    if (all)
      return true;
    if (now() >= until || stopSignal())
      return false;
    changed_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

std::map<std::string, int> Coordinator::missing() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, int> lost;
  for (const auto &[g, n] : nodes_)
    if (int k = n - usable(g); k > 0)
      lost[g] = k * perNode_.at(g);
  return lost;
}

bool Coordinator::anyAgent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &a : agents_)
    if (a->alive)
      return true;
  return false;
}

bool Coordinator::newcomers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &a : agents_)
    if (a->alive && !a->inPlan)
      return true;
  return false;
}

std::string Coordinator::agentsText() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string text;
  for (const std::string &g : groupOrder_)
    text += (text.empty() ? "" : ", ") + g + " x" + std::to_string(usable(g)) + "/" +
            std::to_string(nodes_.at(g));
  return text;
}

JobResult Coordinator::run(const het::plan::Cluster &cluster, const JobOptions &base) {
  JobResult res;
  const int world = cluster.deviceCount();
  res.fates.resize(world);
  std::string program = base.argv.front(), bytes;
  {
    std::ifstream in(program, std::ios::binary);
    if (!in)
      throw std::runtime_error("cannot read the executable " + program);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::unique_lock<std::mutex> lock(mutex_);
  // Ranks group by group, node by node (as het-run --cluster numbers them);
  // a group of the plan draws on the agents of the group it was made from.
  for (auto &a : agents_) {
    a->inPlan = false;
    a->ranks.clear();
    a->result = nlohmann::json();
  }
  std::vector<Agent *> used;
  std::vector<std::string> groupOf(world), kindOf(world);
  std::vector<int> orphans; // ranks of nodes whose agent left since the plan was made
  std::string orphanGroup;
  int rank = 0;
  for (const auto &g : cluster.groups) {
    std::string original = het::plan::originalGroup(spec_, g.name);
    for (int node = 0; node < g.nodes; ++node) {
      Agent *pick = nullptr;
      for (auto &a : agents_)
        if (a->alive && !a->inPlan && a->group == original) {
          pick = a.get();
          break;
        }
      if (pick) {
        pick->inPlan = true;
        used.push_back(pick);
      } else {
        orphanGroup = original;
      }
      for (int d = 0; d < g.devicesPerNode; ++d, ++rank) {
        groupOf[rank] = g.name;
        kindOf[rank] = g.kind;
        if (pick)
          pick->ranks.push_back(rank);
        else
          orphans.push_back(rank);
      }
    }
  }
  if (!orphans.empty()) {
    // An agent left between the plan and its start: nothing starts; its
    // ranks are lost devices, so the job is planned again without them.
    for (int r = 0; r < world; ++r) {
      res.fates[r].signal = std::find(orphans.begin(), orphans.end(), r) != orphans.end() ? SIGKILL
                                                                                        : SIGTERM;
      res.fates[r].killedByUs = res.fates[r].signal == SIGTERM;
    }
    res.failedRank = orphans.front();
    res.cause = "no agent of group " + orphanGroup + " is left for its ranks";
    for (Agent *a : used)
      a->inPlan = false;
    return res;
  }
  Agent *first = used.front();
  std::string root = (first->address.find(':') != std::string::npos ? "[" + first->address + "]"
                                                                     : first->address) +
                     ":" + std::to_string(first->freePort);
  // What to send, decided under the lock; sent without it (an executable
  // may take a while, and agents' readers need the lock meanwhile).
  struct Order {
    Agent *agent;
    AgentChannel *channel;
    bool withProgram;
    nlohmann::json start;
  };
  std::vector<Order> orders;
  // The ranks' rendezvous token is derived from the job token by both
  // ends (attemptToken), so no secret crosses the channel.
  std::string name = baseName(program), digest = het::run::sha256Hex(bytes);
  std::vector<std::string> args(base.argv.begin() + 1, base.argv.end());
  nlohmann::json env = nlohmann::json::object();
  for (const auto &[k, v] : base.env)
    env[k] = v;
  for (Agent *a : used) {
    nlohmann::json rankEnv = nlohmann::json::array();
    for (int r : a->ranks)
      rankEnv.push_back({{"HET_DEVICE_GROUP", groupOf[r]}, {"HET_DEVICE_KIND", kindOf[r]}});
    orders.push_back({a, a->channel.get(), !a->programsSent.count(program),
                      {{"start",
                        {{"attempt", base.attempt},
                         {"ranks", a->ranks},
                         {"world", world},
                         {"root", root},
                         {"program", name},
                         {"args", args},
                         {"timeout_ms", base.collectiveTimeoutMs},
                         {"bind_to_cores", base.bindToCores},
                         {"job_timeout_s", base.jobTimeoutS},
                         // One failure policy for the job, not one per agent:
                         // an agent that SIGTERMs its other ranks at once
                         // would make which ranks are lost a race.
                         {"fail_wait_ms", base.failWaitMs},
                         {"grace_ms", base.graceMs},
                         {"env", env},
                         {"rank_env", rankEnv}}}}});
    a->running = true;
  }
  std::fprintf(stderr, "het-run: attempt %d: starting %d ranks on %zu agents (root %s)\n",
               base.attempt, world, used.size(), root.c_str());
  std::fflush(stderr);
  lock.unlock();
  double t0 = now();
  std::vector<bool> sent(orders.size());
  for (size_t i = 0; i < orders.size(); ++i) {
    Order &o = orders[i];
    bool ok = !o.withProgram ||
              o.channel->send(
                  {{"program", {{"name", name}, {"bytes", bytes.size()}, {"sha256", digest}}}},
                  bytes);
    sent[i] = ok && o.channel->send(o.start);
  }
  lock.lock();
  for (size_t i = 0; i < orders.size(); ++i) {
    if (orders[i].withProgram && sent[i])
      orders[i].agent->programsSent.insert(program);
    if (!sent[i])
      orders[i].agent->alive = false; // found gone below: its ranks are lost
  }
  // Until every agent used has reported or is gone: a failure anywhere
  // stops the others (the cause is chosen once all have reported); a stop
  // hook is relayed once.
  bool stopSent = false, checkpointSent = false;
  // Sends `order` to the agents still running, without the lock.
  auto tellRunning = [&](const nlohmann::json &order) {
    std::vector<AgentChannel *> running;
    for (Agent *a : used)
      if (a->alive && a->running)
        running.push_back(a->channel.get());
    lock.unlock();
    for (AgentChannel *c : running)
      c->send(order);
    lock.lock();
  };
  auto stopOthers = [&](const std::string &why) {
    if (!stopSent)
      tellRunning({{"stop", {{"attempt", base.attempt}, {"reason", why}}}});
    stopSent = true;
  };
  auto gone = [](const Agent *a) { return a->result.is_null() || field(a->result, "leaving", false); };
  for (;;) {
    bool pending = false;
    std::string failure;
    for (Agent *a : used) {
      if (a->running && !a->alive)
        a->running = false;
      if (!a->running && failure.empty() && (gone(a) || !field(a->result, "ok", false)))
        failure = "rank " + std::to_string(a->ranks.front()) + " of agent " +
                  std::to_string(a->id) + " failed";
      pending = pending || a->running;
    }
    if (!pending)
      break;
    if (!failure.empty())
      stopOthers(failure);
    if (int sig = stopSignal())
      stopOthers("het-run received signal " + std::to_string(sig));
    if (!checkpointSent && base.stopAtCheckpoint) {
      lock.unlock();
      bool ask = base.stopAtCheckpoint();
      lock.lock();
      if (ask) {
        checkpointSent = true;
        tellRunning({{"checkpoint_stop", {{"attempt", base.attempt}}}});
        std::fprintf(stderr, "het-run: asked the ranks to stop after their next checkpoint\n");
      }
    }
    changed_.wait_for(lock, std::chrono::milliseconds(50));
  }
  // The cause: an agent gone (its ranks' devices are lost), else a rank
  // killed by a signal its agent did not send, else the first failure.
  int causeRank = 3; // 0 gone, 1 lost signal, 2 other failure
  lastStep_ = -1;
  for (Agent *a : used) {
    if (gone(a)) {
      // Gone with its ranks (they die with their het-run), or leaving
      // (SIGTERM: a node drained): lost devices either way.
      for (int r : a->ranks) {
        res.fates[r] = RankFate{};
        res.fates[r].signal = SIGKILL;
        res.fates[r].seconds = now() - t0;
      }
      if (causeRank > 0) {
        causeRank = 0;
        res.failedRank = a->ranks.front();
        res.cause = "its agent (group " + a->group + ", host " + a->host + ") is " +
                    (a->result.is_null() ? "gone" : "leaving (" + field(a->result, "cause", std::string()) + ")");
      }
      continue;
    }
    const nlohmann::json fates = field(a->result, "fates", nlohmann::json::array());
    bool lostHere = false;
    for (const nlohmann::json &f : fates) {
      if (!f.is_object())
        continue;
      int r = field(f, "rank", -1);
      if (r < 0 || r >= world)
        continue;
      RankFate &fate = res.fates[r];
      fate.exited = field(f, "exited", false);
      fate.status = field(f, "status", 0);
      fate.signal = field(f, "signal", 0);
      fate.killedByUs = field(f, "killed_by_us", false);
      fate.seconds = field(f, "seconds", 0.0);
      lostHere = lostHere || (!fate.exited && !fate.killedByUs && fate.signal != 0);
    }
    if (!field(a->result, "ok", false)) {
      int rankOfCause = lostHere ? 1 : 2;
      if (rankOfCause < causeRank) {
        causeRank = rankOfCause;
        res.failedRank = field(a->result, "failed_rank", a->ranks.front());
        res.cause = field(a->result, "cause", std::string("failed"));
      }
    }
    res.resumedStep = std::max<int64_t>(res.resumedStep, field(a->result, "resumed_step", int64_t(-1)));
    res.stoppedStep = std::max<int64_t>(res.stoppedStep, field(a->result, "stopped_step", int64_t(-1)));
    lastStep_ = std::max<int64_t>(lastStep_, field(a->result, "last_step", int64_t(-1)));
  }
  res.ok = causeRank == 3;
  res.seconds = now() - t0;
  return res;
}

std::vector<std::string> Coordinator::drain(const std::vector<int> &lostRanks) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> drained;
  for (auto &a : agents_) {
    bool holds = false;
    for (int r : lostRanks)
      holds = holds || std::find(a->ranks.begin(), a->ranks.end(), r) != a->ranks.end();
    if (!holds || !a->inPlan)
      continue;
    drained.push_back("agent " + std::to_string(a->id) + " (group " + a->group + ", host " +
                      a->host + ")");
    if (a->alive)
      a->channel->send({{"quit", {{"status", 1}, {"reason", "a device of this node was lost: the node is drained"}}}});
    a->alive = false;
    a->inPlan = false;
  }
  return drained;
}

void Coordinator::finish(int status, const std::string &reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto &a : agents_)
    if (a->alive)
      a->channel->send({{"quit", {{"status", status}, {"reason", reason}}}});
}

} // namespace hetrun
