//===- Admissions.h - lost devices and their re-admission -------*- C++ -*-===//
//
// het-run --elastic keeps the devices its job has lost, by the group of the
// cluster spec it was started with. An operator (or a node agent) says a
// device is back with `het-run --admit HOST:PORT --group G`, a POST to the
// job's metrics server signed with the job token: within --loss-grace-s of a loss the job restarts
// under its plan as if nothing was lost; later, the running job stops at
// its next checkpoint and is planned again for the larger cluster.
// Thread-safe: the HTTP server admits while het-run's loop takes.
//
//===----------------------------------------------------------------------===//

#ifndef HET_RUN_ADMISSIONS_H
#define HET_RUN_ADMISSIONS_H

#include <map>
#include <mutex>
#include <string>

namespace hetrun {

class LostDevices {
public:
  /// `count` more devices of `group` are lost.
  void lose(const std::string &group, int count);
  /// Re-admits `count` (0: all) of the devices lost from `group`; returns
  /// what it did. Throws std::invalid_argument when the group has no lost
  /// device or fewer than `count`.
  std::string admit(const std::string &group, int count);
  /// The devices admitted since the last call, by group (now no longer lost).
  std::map<std::string, int> takeAdmitted();
  /// Whether devices were admitted and not yet taken.
  bool anyAdmitted() const;
  /// Devices lost and not admitted, by group.
  std::map<std::string, int> lost() const;

private:
  mutable std::mutex mutex_;
  std::map<std::string, int> lost_, admitted_;
};

/// Asks the het-run serving metrics at HOST:PORT to re-admit `count` (0:
/// all) lost devices of `group`, the request signed with the job token
/// `token`; returns its answer. Throws std::runtime_error with the reason
/// when it refuses or cannot be reached.
std::string admitDevices(const std::string &address, const std::string &group, int count,
                         const std::string &token);

} // namespace hetrun

#endif
