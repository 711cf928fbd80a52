//===- TuningDatabase.h - het's persistent record of measurements -*- C++ -*-===//
//
// One SQLite file holds what het-tune measured, so that no process measures
// it again: which candidate won for a workload (a collective at a size, a
// kernel's op signature, a stage), on which device kind and host, with
// which versions of het and of the compiler. The schema is versioned and
// documented in docs/tuning.md; files are opened in WAL mode so that two
// tuners can write at once while readers (hetccl, het-compile) read.
//
// No MLIR or LLVM here: libhetccl reads the database too.
//
//===----------------------------------------------------------------------===//
#ifndef HET_TUNE_TUNINGDATABASE_H
#define HET_TUNE_TUNINGDATABASE_H

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct sqlite3;

namespace het::tune {

/// The schema this build reads and writes (meta.schema_version).
constexpr int kSchemaVersion = 1;

/// A database that cannot be used: missing, damaged, locked, another
/// program's file or another schema. The message names the file and what
/// is wrong with it.
class DatabaseError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One measurement's outcome. The key is (kind, workload, device, host,
/// hetVersion, compiler); it never depends on the candidates tried, which
/// `details` lists with their times.
struct Record {
  std::string kind;       // "collective" (later "kernel", "stage")
  std::string workload;   // canonical text of what was measured
  std::string device;     // device kind, "cpu"
  std::string host;       // CPU model and ISA (or GPU name)
  std::string hetVersion; // het's version
  std::string compiler;   // compiler version; "" where none is involved
  std::string choice;     // the winning candidate
  double seconds = 0;     // its time per call
  std::string details;    // JSON: every candidate's time, how measured
  std::string measuredAt; // UTC, ISO 8601
};

class Statement; // a prepared SQLite statement (TuningDatabase.cpp)

class TuningDatabase {
public:
  enum class Mode { ReadOnly, ReadWrite };

  /// Opens `path`; ReadWrite creates it (and its schema) when missing.
  /// `busyMs` is how long to wait for another process's lock. Throws
  /// DatabaseError.
  static std::unique_ptr<TuningDatabase> open(const std::string &path, Mode mode,
                                              int busyMs = 5000);
  ~TuningDatabase();

  /// Inserts or replaces the record with `record`'s key.
  void put(const Record &record);
  /// Records of `kind` for this device, host and het version whose workload
  /// starts with `workloadPrefix`.
  std::vector<Record> find(const std::string &kind, const std::string &workloadPrefix,
                           const std::string &device, const std::string &host,
                           const std::string &hetVersion) const;
  /// Every record, ordered by key.
  std::vector<Record> all() const;

  /// JSON text of every record ({"schema_version": 1, "records": [...]}).
  std::string exportJson() const;
  /// Adds the records of exportJson() text (from this or another machine),
  /// replacing those with the same key; returns how many. Throws
  /// DatabaseError naming the record that is malformed.
  size_t importJson(const std::string &text);

  const std::string &path() const { return path_; }

private:
  TuningDatabase(sqlite3 *db, std::string path) : db_(db), path_(std::move(path)) {}
  [[noreturn]] void fail(const std::string &what) const;
  /// Every row of a prepared SELECT of the record columns.
  std::vector<Record> readAll(Statement &query) const;
  void execute(const char *sql) const;
  sqlite3 *db_;
  std::string path_;
};

/// The workload text of an all-reduce record, up to its size:
/// "allreduce ranks=R nodes=N link=shm|tcp|mixed bytes=" (the size follows).
/// hetccl and het-tune both build it here so that their keys agree.
std::string allReduceWorkloadPrefix(int ranks, int nodes, const std::string &link);

/// The workload text of a message record (het-tune stages), up to its size:
/// "message ranks=R nodes=1 link=shm after=A bytes=", A "compute" (to a rank
/// that waited for the sender's work: asleep) or "message" (right after
/// the previous one, as a collective's steps follow each other).
std::string messageWorkloadPrefix(int ranks, const std::string &after);

/// This host's identity in records: the CPU model and its widest vector
/// ISA ("AMD EPYC 9R14 (avx512)").
std::string hostIdentity();
/// het's version as records carry it.
std::string hetVersion();
/// The current UTC time, ISO 8601.
std::string utcNow();

} // namespace het::tune

#endif
