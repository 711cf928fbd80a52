//===- Admissions.cpp - lost devices and their re-admission ---------------===//
#include "Admissions.h"
#include "Metrics.h"

#include "het/Run/RequestSignature.h"

#include <httplib.h>

#include <stdexcept>

namespace hetrun {

void LostDevices::lose(const std::string &group, int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  lost_[group] += count;
}

std::string LostDevices::admit(const std::string &group, int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = lost_.find(group);
  if (it == lost_.end() || it->second == 0) {
    std::string groups;
    for (const auto &[g, n] : lost_)
      if (n > 0)
        groups += (groups.empty() ? "" : ", ") + g + " (" + std::to_string(n) + ")";
    throw std::invalid_argument("group '" + group + "' has no lost device (lost: " +
                                (groups.empty() ? "none" : groups) + ")");
  }
  if (count > it->second)
    throw std::invalid_argument("group '" + group + "' has lost " + std::to_string(it->second) +
                                " device" + (it->second == 1 ? "" : "s") + ", not " +
                                std::to_string(count));
  int n = count > 0 ? count : it->second;
  it->second -= n;
  admitted_[group] += n;
  return "re-admitted " + std::to_string(n) + " device" + (n == 1 ? "" : "s") + " of group '" +
         group + "'";
}

std::map<std::string, int> LostDevices::takeAdmitted() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, int> taken;
  taken.swap(admitted_);
  return taken;
}

bool LostDevices::anyAdmitted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !admitted_.empty();
}

std::map<std::string, int> LostDevices::lost() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, int> out;
  for (const auto &[group, n] : lost_)
    if (n > 0)
      out[group] = n;
  return out;
}

std::string admitDevices(const std::string &address, const std::string &group, int count,
                         const std::string &token) {
  auto [host, port] = hostAndPort(address, "--admit");
  httplib::Client client(host, port);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  httplib::Params params{{"group", group}};
  if (count > 0)
    params.emplace("count", std::to_string(count));
  httplib::Headers headers{
      {het::run::kSignatureHeader, het::run::signRequest(token, "POST", "/admit", params)}};
  auto res = client.Post("/admit", headers, params);
  if (!res)
    throw std::runtime_error("no het-run serves metrics at " + address + " (" +
                             httplib::to_string(res.error()) + ")");
  if (res->status != 200)
    throw std::runtime_error(address + " refused: " + res->body);
  return res->body;
}

} // namespace hetrun
