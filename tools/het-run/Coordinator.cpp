//===- Coordinator.cpp - het-run --elastic --coordinate: a job of agents --===//
#include "Coordinator.h"
#include "AgentChannel.h"
#include "Metrics.h"

#include "het/Plan/ClusterSurvivors.h"

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

std::string baseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
} // namespace

Coordinator::Coordinator(const nlohmann::json &spec, const het::plan::Cluster &original,
                         const std::string &address, int port, JobMetrics *metrics)
    : spec_(spec), metrics_(metrics) {
  for (const auto &g : original.groups) {
    perNode_[g.name] = g.devicesPerNode;
    nodes_[g.name] = g.nodes;
    groupOrder_.push_back(g.name);
  }
  if (const char *t = std::getenv("HETCCL_TOKEN"))
    token_ = t;
  listener_ = std::make_unique<AgentListener>(address, port);
  acceptor_ = std::thread([this] { acceptLoop(); });
}

Coordinator::~Coordinator() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  acceptor_.join();
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
    nlohmann::json hello;
    if (!channel->receive(hello, 5.0) || !hello.contains("hello") || !hello["hello"].is_object())
      continue; // not an agent
    const nlohmann::json &h = hello["hello"];
    std::string group = h.value("group", ""), host = h.value("host", "");
    // With a job token (HETCCL_TOKEN, the Kubernetes secret), only agents
    // that know it join: they receive executables and rendezvous tokens.
    if (!token_.empty()) {
      std::string theirs = h.value("token", "");
      unsigned diff = theirs.size() != token_.size();
      for (size_t i = 0; i < token_.size(); ++i)
        diff |= static_cast<unsigned char>(token_[i]) ^
                static_cast<unsigned char>(i < theirs.size() ? theirs[i] : 0);
      if (diff) {
        channel->send({{"refused", "the agent's HETCCL_TOKEN is not this job's"}});
        continue;
      }
    }
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
    agent->freePort = h.value("free_port", 0);
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

void Coordinator::readLoop(Agent *a) {
  for (;;) {
    nlohmann::json m;
    if (!a->channel->receive(m))
      break;
    if (m.contains("metrics") && m["metrics"].is_string()) {
      if (metrics_)
        metrics_->ingest(m["metrics"].get<std::string>());
      continue;
    }
    if (m.contains("done") && m["done"].is_object()) {
      std::lock_guard<std::mutex> lock(mutex_);
      a->result = m["done"];
      a->freePort = a->result.value("free_port", a->freePort);
      a->running = false;
      changed_.notify_all();
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (a->alive && !stopping_)
    std::fprintf(stderr, "het-run: agent %d (group %s, host %s) is gone\n", a->id, a->group.c_str(),
                 a->host.c_str());
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
  std::vector<std::string> groupOf(world);
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
      if (!pick)
        throw std::runtime_error("no agent of group '" + original + "' left for node " +
                                 std::to_string(node) + " of group '" + g.name + "'");
      pick->inPlan = true;
      used.push_back(pick);
      for (int d = 0; d < g.devicesPerNode; ++d) {
        groupOf[rank] = g.name;
        pick->ranks.push_back(rank++);
      }
    }
  }
  Agent *first = used.front();
  std::string root = (first->address.find(':') != std::string::npos ? "[" + first->address + "]"
                                                                     : first->address) +
                     ":" + std::to_string(first->freePort);
  std::string token = randomToken();
  std::fprintf(stderr, "het-run: attempt %d: starting %d ranks on %zu agents (root %s)\n",
               base.attempt, world, used.size(), root.c_str());
  std::fflush(stderr);
  double t0 = now();
  std::string name = baseName(program);
  std::vector<std::string> args(base.argv.begin() + 1, base.argv.end());
  nlohmann::json env = nlohmann::json::object();
  for (const auto &[k, v] : base.env)
    env[k] = v;
  for (Agent *a : used) {
    nlohmann::json rankEnv = nlohmann::json::array();
    for (int r : a->ranks)
      rankEnv.push_back({{"HET_DEVICE_GROUP", groupOf[r]},
                         {"HET_DEVICE_KIND", cluster.groups[0].kind}});
    // The kind of each rank's group.
    for (size_t i = 0; i < a->ranks.size(); ++i)
      for (const auto &g : cluster.groups)
        if (g.name == groupOf[a->ranks[i]])
          rankEnv[i]["HET_DEVICE_KIND"] = g.kind;
    bool sent = true;
    if (!a->programsSent.count(program)) {
      sent = a->channel->send({{"program", {{"name", name}, {"bytes", bytes.size()}}}}, bytes);
      if (sent)
        a->programsSent.insert(program);
    }
    sent = sent && a->channel->send({{"start",
                                      {{"attempt", base.attempt},
                                       {"ranks", a->ranks},
                                       {"world", world},
                                       {"root", root},
                                       {"token", token},
                                       {"program", name},
                                       {"args", args},
                                       {"timeout_ms", base.collectiveTimeoutMs},
                                       {"job_timeout_s", base.jobTimeoutS},
                                       {"env", env},
                                       {"rank_env", rankEnv}}}});
    a->running = sent;
    if (!sent)
      a->alive = false;
  }
  // Until every agent used has reported or is gone: a failure anywhere
  // stops the others; a stop hook is relayed once.
  bool stopSent = false, checkpointSent = false;
  std::string cause;
  int failedRank = -1;
  auto stopOthers = [&](const std::string &why) {
    if (stopSent)
      return;
    stopSent = true;
    for (Agent *a : used)
      if (a->alive && a->running)
        a->channel->send({{"stop", {{"attempt", base.attempt}, {"reason", why}}}});
  };
  for (;;) {
    bool pending = false;
    for (Agent *a : used) {
      if (a->running && !a->alive) {
        a->running = false;
        if (cause.empty()) {
          cause = "its agent (group " + a->group + ", host " + a->host + ") is gone";
          failedRank = a->ranks.front();
        }
      }
      if (!a->running && !a->result.is_null() && !a->result.value("ok", false) && cause.empty()) {
        cause = a->result.value("cause", "failed");
        failedRank = a->result.value("failed_rank", a->ranks.front());
      }
      pending = pending || a->running;
    }
    if (!pending)
      break;
    if (!cause.empty())
      stopOthers("rank " + std::to_string(failedRank) + " " + cause);
    if (int sig = stopSignal())
      stopOthers("het-run received signal " + std::to_string(sig));
    if (!checkpointSent && base.stopAtCheckpoint) {
      lock.unlock();
      bool ask = base.stopAtCheckpoint();
      lock.lock();
      if (ask) {
        checkpointSent = true;
        for (Agent *a : used)
          if (a->alive && a->running)
            a->channel->send({{"checkpoint_stop", {{"attempt", base.attempt}}}});
        std::fprintf(stderr, "het-run: asked the ranks to stop after their next checkpoint\n");
      }
    }
    changed_.wait_for(lock, std::chrono::milliseconds(50));
  }
  res.fates.resize(world);
  res.ok = cause.empty();
  res.failedRank = failedRank;
  res.cause = cause;
  lastStep_ = -1;
  for (Agent *a : used) {
    if (a->result.is_null()) {
      // Gone with its ranks (they die with their het-run): lost devices.
      for (int r : a->ranks) {
        res.fates[r].exited = false;
        res.fates[r].signal = SIGKILL;
        res.fates[r].seconds = now() - t0;
      }
      continue;
    }
    for (const nlohmann::json &f : a->result.value("fates", nlohmann::json::array())) {
      int r = f.value("rank", -1);
      if (r < 0 || r >= world)
        continue;
      RankFate &fate = res.fates[r];
      fate.exited = f.value("exited", false);
      fate.status = f.value("status", 0);
      fate.signal = f.value("signal", 0);
      fate.killedByUs = f.value("killed_by_us", false);
      fate.seconds = f.value("seconds", 0.0);
    }
    res.resumedStep = std::max<int64_t>(res.resumedStep, a->result.value("resumed_step", int64_t(-1)));
    res.stoppedStep = std::max<int64_t>(res.stoppedStep, a->result.value("stopped_step", int64_t(-1)));
    lastStep_ = std::max<int64_t>(lastStep_, a->result.value("last_step", int64_t(-1)));
  }
  res.stopAsked = checkpointSent;
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
