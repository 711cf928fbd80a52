//===- Metrics.cpp - a job's live metrics: Prometheus, status, log --------===//
#include "Metrics.h"
#include "Admissions.h"

#include "het/Run/RequestSignature.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace hetrun {

namespace {
std::string utcNow() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  long ms = static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
      1000);
  char buf[96];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

/// A Prometheus label value: backslash, quote and newline escaped.
std::string escaped(const std::string &v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
} // namespace

JobMetrics::JobMetrics(const std::string &logFile, int rankOffset) : rankOffset_(rankOffset) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("metrics pipe: ") + std::strerror(errno));
  readFd_ = fds[0];
  writeFd_ = fds[1];
  // The ranks inherit the write end; a full pipe drops a line rather than
  // stalling a training step.
  ::fcntl(writeFd_, F_SETFD, 0);
  ::fcntl(writeFd_, F_SETFL, O_NONBLOCK);
  if (!logFile.empty()) {
    log_.open(logFile, std::ios::app);
    if (!log_)
      throw std::runtime_error("cannot open the metrics log " + logFile + ": " +
                               std::strerror(errno));
  }
  reader_ = std::thread([this] { readLoop(); });
}

JobMetrics::~JobMetrics() {
  stop_ = true;
  if (http_)
    http_->stop();
  if (server_.joinable())
    server_.join();
  if (reader_.joinable())
    reader_.join();
  ::close(readFd_);
  ::close(writeFd_);
}

std::pair<std::string, std::string> JobMetrics::rankEnvironment() const {
  return {"HET_METRICS_FD", std::to_string(writeFd_)};
}

namespace {
/// Answers a refused request: 401 asks for the credential, 403 refuses
/// it; logged, so an operator sees who tried.
void refuse(const httplib::Request &req, httplib::Response &res, const het::run::Verdict &v) {
  res.status = v.status;
  if (v.status == 401)
    res.set_header("WWW-Authenticate", "HetSignature, Bearer");
  res.set_content(v.reason + "\n", "text/plain; charset=utf-8");
  std::fprintf(stderr, "het-run: refused %s %s from %s: %s\n", req.method.c_str(), req.path.c_str(),
               req.remote_addr.c_str(), v.reason.c_str());
}
} // namespace

int JobMetrics::serve(const std::string &address, int port, const std::string &token,
                      bool protectViews) {
  if (!token.empty())
    verifier_ = std::make_unique<het::run::RequestVerifier>(token);
  protectViews_ = protectViews && verifier_;
  // A read-only view: open, or (--console-auth) for holders of the token.
  auto reader = [this](const httplib::Request &req, httplib::Response &res) {
    if (!protectViews_)
      return true;
    het::run::Verdict v = verifier_->verifyReader(
        req.method, req.path, req.params, req.get_header_value(het::run::kSignatureHeader),
        req.get_header_value("Authorization"), het::run::unixNow());
    if (!v.ok())
      refuse(req, res, v);
    return v.ok();
  };
  // A request that changes the job: signed with the job token, or refused.
  auto writer = [this](const httplib::Request &req, httplib::Response &res) {
    het::run::Verdict v =
        verifier_ ? verifier_->verifySigned(req.method, req.path, req.params,
                                            req.get_header_value(het::run::kSignatureHeader),
                                            het::run::unixNow())
                  : het::run::Verdict{403, "this server has no job token: it changes nothing"};
    if (!v.ok())
      refuse(req, res, v);
    return v.ok();
  };
  http_ = std::make_unique<httplib::Server>();
  http_->Get("/metrics", [this, reader](const httplib::Request &req, httplib::Response &res) {
    if (reader(req, res))
      res.set_content(prometheus(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http_->Get("/status", [this, reader](const httplib::Request &req, httplib::Response &res) {
    if (reader(req, res))
      res.set_content(status(), "text/plain; charset=utf-8");
  });
  http_->Post("/admit", [this, writer](const httplib::Request &req, httplib::Response &res) {
    if (!writer(req, res))
      return;
    LostDevices *devices = admissions_.load();
    if (!devices) {
      res.status = 404;
      std::lock_guard<std::mutex> lock(mutex_);
      res.set_content(admissionRefusal_ + "\n", "text/plain; charset=utf-8");
      return;
    }
    std::string group = req.get_param_value("group"), count = req.get_param_value("count");
    int n = 0;
    if (!count.empty()) {
      char *end = nullptr;
      long v = std::strtol(count.c_str(), &end, 10);
      if (*end || v < 1 || v > (1 << 20)) {
        res.status = 400;
        res.set_content("count must be a positive number, not '" + count + "'\n",
                        "text/plain; charset=utf-8");
        return;
      }
      n = static_cast<int>(v);
    }
    try {
      res.set_content(devices->admit(group, n) + "\n", "text/plain; charset=utf-8");
    } catch (const std::invalid_argument &e) {
      res.status = 409;
      res.set_content(std::string(e.what()) + "\n", "text/plain; charset=utf-8");
    }
  });
  int bound = port == 0 ? http_->bind_to_any_port(address) : (http_->bind_to_port(address, port) ? port : -1);
  if (bound < 0)
    throw std::runtime_error("cannot serve metrics on " + address + ":" + std::to_string(port) +
                             " (in use, or not an address of this host)");
  server_ = std::thread([this] { http_->listen_after_bind(); });
  port_ = bound;
  return bound;
}

void JobMetrics::acceptAdmissions(LostDevices *devices) { admissions_.store(devices); }

void JobMetrics::refuseAdmissions(const std::string &reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  admissionRefusal_ = reason;
}

void JobMetrics::beginAttempt(int attempt, int ranks, const std::vector<std::string> &groups) {
  std::vector<int> global(ranks);
  for (int k = 0; k < ranks; ++k)
    global[k] = rankOffset_ + k;
  beginAttempt(attempt, global, groups);
}

void JobMetrics::beginAttempt(int attempt, const std::vector<int> &globalRanks,
                              const std::vector<std::string> &groups) {
  std::lock_guard<std::mutex> lock(mutex_);
  attempt_ = attempt;
  int ranks = static_cast<int>(globalRanks.size());
  ranks_.assign(ranks, Rank{});
  localOf_.clear();
  for (int k = 0; k < ranks; ++k) {
    localOf_[globalRanks[k]] = k;
    ranks_[k].labels["rank"] = std::to_string(globalRanks[k]);
    if (static_cast<size_t>(k) < groups.size())
      ranks_[k].labels["group"] = groups[k];
  }
  if (log_.is_open()) {
    log_ << nlohmann::json{{"time", utcNow()}, {"event", "attempt"}, {"attempt", attempt},
                           {"ranks", ranks}}
                .dump()
         << "\n";
    log_.flush();
  }
}

void JobMetrics::endAttempt(const JobResult &result) {
  // The ranks are gone; let the reader take what they wrote last (the pipe
  // empty, up to a second) before their fates are written after it.
  for (int wait = 0; wait < 1000; ++wait) {
    int pending = 0;
    if (::ioctl(readFd_, FIONREAD, &pending) != 0 || (pending == 0 && !reading_))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json fates = nlohmann::json::array();
  for (size_t k = 0; k < result.fates.size() && k < ranks_.size(); ++k) {
    const RankFate &f = result.fates[k];
    ranks_[k].state = f.exited       ? (f.status == 0 ? "finished" : "failed")
                      : f.killedByUs ? "stopped"
                      : f.signal == SIGKILL ? "lost"
                                            : "crashed";
    fates.push_back(ranks_[k].state);
  }
  if (log_.is_open()) {
    log_ << nlohmann::json{{"time", utcNow()}, {"event", "attempt_end"}, {"attempt", attempt_},
                           {"ok", result.ok}, {"ranks", fates}}
                .dump()
         << "\n";
    log_.flush();
  }
}

void JobMetrics::countReplan() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++replans_;
}

int64_t JobMetrics::lastStep() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t step = -1;
  for (const Rank &r : ranks_)
    step = std::max(step, r.step);
  return step;
}

void JobMetrics::readLoop() {
  std::string partial;
  char buf[65536];
  while (!stop_) {
    pollfd p{readFd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0)
      continue;
    reading_ = true; // until what this read returns is taken
    ssize_t n = ::read(readFd_, buf, sizeof buf);
    if (n <= 0) {
      reading_ = false;
      continue;
    }
    partial.append(buf, static_cast<size_t>(n));
    size_t start = 0, nl;
    while ((nl = partial.find('\n', start)) != std::string::npos) {
      std::string line = partial.substr(start, nl - start);
      take(line);
      std::function<void(const std::string &)> forward;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        forward = forward_;
      }
      if (forward)
        forward(line);
      start = nl + 1;
    }
    partial.erase(0, start);
    reading_ = false;
  }
}

void JobMetrics::forwardLines(std::function<void(const std::string &)> forward) {
  std::lock_guard<std::mutex> lock(mutex_);
  forward_ = std::move(forward);
}

void JobMetrics::take(const std::string &line) {
  // Anything in the pipe that is not a well-formed metrics line (a rank's
  // child may inherit it) is ignored: it must never take het-run down.
  try {
    takeLine(line);
  } catch (const std::exception &) {
  }
}

void JobMetrics::takeLine(const std::string &line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("rank") || !j["rank"].is_string())
    return; // not a metrics line: ignore rather than guess
  std::lock_guard<std::mutex> lock(mutex_);
  // Ranks report their global rank; this het-run's table is by local rank.
  auto local = localOf_.find(std::atoi(j["rank"].get<std::string>().c_str()));
  if (local == localOf_.end())
    return;
  int k = local->second;
  Rank &r = ranks_[k];
  for (const char *label : {"rank", "group", "kind", "stage", "replica", "part"})
    if (j.contains(label) && j[label].is_string())
      r.labels[label] = j[label].get<std::string>();
  r.state = "running";
  r.step = j.value("step", int64_t(-1));
  r.stepSeconds = j.value("step_seconds", 0.0);
  int64_t samples = j.value("samples", int64_t(0));
  r.samplesPerSecond = r.stepSeconds > 0 ? static_cast<double>(samples) / r.stepSeconds : 0;
  r.hasLoss = j.contains("loss");
  if (r.hasLoss)
    r.loss = j.value("loss", 0.0);
  r.collective += j.value("collective_seconds", 0.0);
  r.p2p += j.value("p2p_seconds", 0.0);
  r.stall += j.value("checkpoint_stall_seconds", 0.0);
  r.rss = j.value("rss_bytes", int64_t(0));
  r.predictedStepSeconds = j.value("predicted_step_seconds", 0.0);
  r.globalBatch = std::atoll(j.value("global_batch", "0").c_str());
  if (log_.is_open()) {
    j["time"] = utcNow();
    j["attempt"] = attempt_;
    log_ << j.dump() << "\n";
    log_.flush();
  }
}

std::string JobMetrics::prometheus() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream out;
  auto family = [&](const char *name, const char *type, const char *help) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  // The job: its attempt, ranks, and the throughput of its step (the
  // global batch over the step time of the rank that reports the loss).
  double jobRate = 0;
  int64_t jobStep = -1;
  for (const Rank &r : ranks_)
    if (r.hasLoss && r.stepSeconds > 0) {
      jobRate = static_cast<double>(r.globalBatch) / r.stepSeconds;
      jobStep = r.step;
    }
  family("het_job_attempt", "gauge", "The job's attempt (0, then one more per restart or re-plan).");
  out << "het_job_attempt " << attempt_ << "\n";
  family("het_job_replans_total", "counter", "Re-plans after devices were lost (het-run --elastic).");
  out << "het_job_replans_total " << replans_ << "\n";
  family("het_job_ranks", "gauge", "Ranks of the current attempt.");
  out << "het_job_ranks " << ranks_.size() << "\n";
  family("het_job_step", "gauge", "The last step the job finished.");
  out << "het_job_step " << jobStep << "\n";
  family("het_job_samples_per_second", "gauge", "Global batch over the last step's time.");
  out << "het_job_samples_per_second " << number(jobRate) << "\n";
  struct Series {
    const char *name, *type, *help;
    double (*value)(const Rank &);
    bool lossOnly;
    bool predictedOnly = false;
  };
  static const Series series[] = {
      {"het_rank_up", "gauge", "1 while the rank reports steps, 0 once it ended or was lost.",
       [](const Rank &r) { return r.state == "running" ? 1.0 : 0.0; }, false},
      {"het_rank_step", "gauge", "The rank's last finished step.",
       [](const Rank &r) { return static_cast<double>(r.step); }, false},
      {"het_rank_step_seconds", "gauge", "Time of the rank's last step.",
       [](const Rank &r) { return r.stepSeconds; }, false},
      {"het_rank_samples_per_second", "gauge", "The rank's samples over its last step's time.",
       [](const Rank &r) { return r.samplesPerSecond; }, false},
      {"het_rank_loss", "gauge", "The loss of the last step (the rank that prints it).",
       [](const Rank &r) { return r.loss; }, true},
      {"het_rank_collective_seconds_total", "counter", "Time in collectives (hetccl).",
       [](const Rank &r) { return r.collective; }, false},
      {"het_rank_p2p_seconds_total", "counter",
       "Time exchanging activations and gradients between stages.",
       [](const Rank &r) { return r.p2p; }, false},
      {"het_rank_checkpoint_stall_seconds_total", "counter",
       "Time the training loop waited to hand a checkpoint over.",
       [](const Rank &r) { return r.stall; }, false},
      {"het_rank_resident_memory_bytes", "gauge", "The rank's resident memory.",
       [](const Rank &r) { return static_cast<double>(r.rss); }, false},
      {"het_rank_predicted_step_seconds", "gauge",
       "The plan's predicted time per step (het-plan), for ranks of a planned pipeline.",
       [](const Rank &r) { return r.predictedStepSeconds; }, false, true},
  };
  for (const Series &s : series) {
    family(s.name, s.type, s.help);
    for (const Rank &r : ranks_) {
      if ((s.lossOnly && !r.hasLoss) || (s.predictedOnly && r.predictedStepSeconds <= 0))
        continue;
      out << s.name << "{";
      bool first = true;
      for (const auto &[k, v] : r.labels) {
        out << (first ? "" : ",") << k << "=\"" << escaped(v) << "\"";
        first = false;
      }
      out << "} " << number(s.value(r)) << "\n";
    }
  }
  return out.str();
}

std::string JobMetrics::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int running = 0;
  int64_t step = -1;
  double rate = 0, loss = 0;
  bool hasLoss = false;
  for (const Rank &r : ranks_) {
    running += r.state == "running";
    if (r.hasLoss && r.stepSeconds > 0) {
      step = r.step;
      rate = static_cast<double>(r.globalBatch) / r.stepSeconds;
      loss = r.loss;
      hasLoss = true;
    }
  }
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "het job: attempt %d, %d of %zu ranks running, step %lld", attempt_,
                running, ranks_.size(), static_cast<long long>(step));
  out << line;
  if (hasLoss) {
    std::snprintf(line, sizeof line, ", %.1f samples/s, loss %.6g", rate, loss);
    out << line;
  }
  out << (replans_ ? ", " + std::to_string(replans_) + " re-plans" : "") << "\n";
  std::snprintf(line, sizeof line, "%-10s %-12s %4s %-6s %4s %4s %-9s %7s %9s %11s %10s %9s %8s %8s %8s\n",
                "group", "kind", "rank", "stage", "repl", "part", "state", "step", "step ms",
                "samples/s", "loss", "coll ms", "p2p ms", "ckpt ms", "RSS MiB");
  out << line;
  // By device group, in the order the groups first appear.
  std::vector<std::string> order;
  for (const Rank &r : ranks_) {
    std::string g = r.labels.count("group") ? r.labels.at("group") : "";
    if (std::find(order.begin(), order.end(), g) == order.end())
      order.push_back(g);
  }
  auto label = [](const Rank &r, const char *k) {
    return r.labels.count(k) ? r.labels.at(k) : std::string("-");
  };
  for (const std::string &g : order)
    for (const Rank &r : ranks_) {
      if ((r.labels.count("group") ? r.labels.at("group") : "") != g)
        continue;
      std::string lossText = r.hasLoss ? number(r.loss) : "-";
      std::snprintf(line, sizeof line,
                    "%-10s %-12s %4s %-6s %4s %4s %-9s %7lld %9.3f %11.1f %10s %9.1f %8.1f %8.1f %8.1f\n",
                    label(r, "group").c_str(), label(r, "kind").c_str(), label(r, "rank").c_str(),
                    label(r, "stage").c_str(), label(r, "replica").c_str(),
                    label(r, "part").c_str(), r.state.c_str(), static_cast<long long>(r.step),
                    1e3 * r.stepSeconds, r.samplesPerSecond, lossText.c_str(),
                    1e3 * r.collective, 1e3 * r.p2p, 1e3 * r.stall,
                    static_cast<double>(r.rss) / (1 << 20));
      out << line;
    }
  return out.str();
}

std::pair<std::string, int> hostAndPort(const std::string &address, const char *option,
                                        bool portZero) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos)
    throw std::runtime_error(std::string(option) + " expects HOST:PORT, got '" + address + "'");
  std::string portText = address.substr(colon + 1);
  char *end = nullptr;
  long port = std::strtol(portText.c_str(), &end, 10);
  if (portText.empty() || *end || port < (portZero ? 0 : 1) || port > 65535)
    throw std::runtime_error(std::string(option) + ": bad port in '" + address + "'");
  return {address.substr(0, colon), static_cast<int>(port)};
}

std::string fetchStatus(const std::string &address, const std::string &token) {
  auto [host, port] = hostAndPort(address, "--status");
  httplib::Client client(host, port);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  httplib::Headers headers;
  if (!token.empty())
    headers.emplace("Authorization", "Bearer " + token);
  auto res = client.Get("/status", headers);
  if (!res)
    throw std::runtime_error("no het-run serves metrics at " + address + " (" +
                             httplib::to_string(res.error()) + ")");
  if (res->status != 200)
    throw std::runtime_error(address + "/status answered HTTP " + std::to_string(res->status) +
                             ": " + res->body);
  return res->body;
}

} // namespace hetrun
