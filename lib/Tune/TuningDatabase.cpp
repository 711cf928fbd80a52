//===- TuningDatabase.cpp - the tuning database on SQLite ------------------===//
//
// Schema version 1 (docs/tuning.md):
//   PRAGMA application_id = 0x48455454 ('HETT'): marks the file as het's,
//     so another program's SQLite file is refused by name, not misread.
//   meta(key PRIMARY KEY, value): schema_version, created_by.
//   records(kind, workload, device, host, het_version, compiler,
//           choice, seconds, details, measured_at),
//     primary key (kind, workload, device, host, het_version, compiler).
//
//===----------------------------------------------------------------------===//

#include "het/Tune/TuningDatabase.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <sys/stat.h>

namespace het::tune {

/// A prepared statement, finalized on scope exit.
class Statement {
public:
  Statement(sqlite3 *db, const char *sql) {
    status = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt); }
  void bind(int i, const std::string &text) {
    sqlite3_bind_text(stmt, i, text.c_str(), int(text.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, double value) { sqlite3_bind_double(stmt, i, value); }
  std::string text(int i) const {
    const unsigned char *t = sqlite3_column_text(stmt, i);
    return t ? reinterpret_cast<const char *>(t) : "";
  }
  sqlite3_stmt *stmt = nullptr;
  int status = SQLITE_OK;
};

namespace {

constexpr int kApplicationId = 0x48455454; // 'HETT'

Record readRecord(const Statement &s) {
  Record r;
  r.kind = s.text(0);
  r.workload = s.text(1);
  r.device = s.text(2);
  r.host = s.text(3);
  r.hetVersion = s.text(4);
  r.compiler = s.text(5);
  r.choice = s.text(6);
  r.seconds = sqlite3_column_double(s.stmt, 7);
  r.details = s.text(8);
  r.measuredAt = s.text(9);
  return r;
}

constexpr const char *kColumns = "kind, workload, device, host, het_version, compiler, choice, "
                                 "seconds, details, measured_at";

} // namespace

std::unique_ptr<TuningDatabase> TuningDatabase::open(const std::string &path, Mode mode,
                                                     int busyMs) {
  struct stat info;
  bool exists = ::stat(path.c_str(), &info) == 0;
  if (!exists && mode == Mode::ReadOnly)
    throw DatabaseError("tuning database '" + path + "' does not exist");
  if (exists && !S_ISREG(info.st_mode))
    throw DatabaseError("tuning database '" + path + "' is not a file");
  sqlite3 *db = nullptr;
  int flags =
      mode == Mode::ReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw DatabaseError("cannot open tuning database '" + path + "': " + message);
  }
  std::unique_ptr<TuningDatabase> result(new TuningDatabase(db, path));
  sqlite3_busy_timeout(db, busyMs);
  sqlite3_extended_result_codes(db, 1);

  // What the file is: an empty file (or a new one) becomes a database of
  // ours when writable; anything else must carry our application id and
  // schema version.
  int applicationId = 0;
  bool empty = false;
  {
    // Statements finalized before anything else runs: a live one holds a
    // read transaction, in which the journal mode cannot change.
    Statement id(db, "PRAGMA application_id");
    if (id.status != SQLITE_OK || sqlite3_step(id.stmt) != SQLITE_ROW)
      result->fail("cannot read it");
    applicationId = sqlite3_column_int(id.stmt, 0);
    Statement tables(db, "SELECT count(*) FROM sqlite_master");
    if (tables.status != SQLITE_OK || sqlite3_step(tables.stmt) != SQLITE_ROW)
      result->fail("cannot read its tables");
    empty = sqlite3_column_int(tables.stmt, 0) == 0;
  }
  if (empty && applicationId == 0) {
    if (mode == Mode::ReadOnly)
      throw DatabaseError("tuning database '" + path + "' is empty (no schema)");
    result->execute("PRAGMA journal_mode=WAL");
    result->execute("BEGIN IMMEDIATE");
    result->execute(("PRAGMA application_id=" + std::to_string(kApplicationId)).c_str());
    result->execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    result->execute(("INSERT OR IGNORE INTO meta VALUES('schema_version', '" +
                     std::to_string(kSchemaVersion) + "'), ('created_by', 'het " + hetVersion() +
                     "')")
                        .c_str());
    result->execute(
        "CREATE TABLE IF NOT EXISTS records(kind TEXT NOT NULL, workload TEXT NOT NULL, "
        "device TEXT NOT NULL, host TEXT NOT NULL, het_version TEXT NOT NULL, "
        "compiler TEXT NOT NULL, choice TEXT NOT NULL, seconds REAL NOT NULL, "
        "details TEXT NOT NULL, measured_at TEXT NOT NULL, PRIMARY KEY(kind, "
        "workload, device, host, het_version, compiler))");
    result->execute("COMMIT");
    return result;
  }
  if (applicationId != kApplicationId)
    throw DatabaseError("'" + path + "' is not a het tuning database (SQLite application id " +
                        std::to_string(applicationId) + ", expected " +
                        std::to_string(kApplicationId) + ")");
  std::string schema;
  {
    Statement version(db, "SELECT value FROM meta WHERE key = 'schema_version'");
    if (version.status != SQLITE_OK || sqlite3_step(version.stmt) != SQLITE_ROW)
      result->fail("has no schema version");
    schema = version.text(0);
  }
  if (schema != std::to_string(kSchemaVersion))
    throw DatabaseError("tuning database '" + path + "' has schema version " + schema +
                        "; this het reads version " + std::to_string(kSchemaVersion) +
                        " (re-tune, or use the het that wrote it)");
  if (mode == Mode::ReadWrite)
    result->execute("PRAGMA journal_mode=WAL");
  return result;
}

TuningDatabase::~TuningDatabase() { sqlite3_close(db_); }

void TuningDatabase::fail(const std::string &what) const {
  int code = sqlite3_extended_errcode(db_);
  std::string reason = sqlite3_errmsg(db_);
  if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED)
    reason = "locked by another process (" + reason + ")";
  else if ((code & 0xff) == SQLITE_NOTADB || (code & 0xff) == SQLITE_CORRUPT)
    reason = "damaged (" + reason + ")";
  throw DatabaseError("tuning database '" + path_ + "': " + what + ": " + reason);
}

void TuningDatabase::execute(const char *sql) const {
  char *message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    sqlite3_free(message);
    fail(std::string("cannot run '") + sql + "'");
  }
}

std::vector<Record> TuningDatabase::readAll(Statement &s) const {
  std::vector<Record> records;
  int step;
  while ((step = sqlite3_step(s.stmt)) == SQLITE_ROW)
    records.push_back(readRecord(s));
  if (step != SQLITE_DONE)
    fail("cannot read records");
  return records;
}

void TuningDatabase::put(const Record &r) {
  Statement s(db_, (std::string("INSERT OR REPLACE INTO records(") + kColumns +
                    ") VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
                       .c_str());
  if (s.status != SQLITE_OK)
    fail("cannot prepare a write");
  s.bind(1, r.kind);
  s.bind(2, r.workload);
  s.bind(3, r.device);
  s.bind(4, r.host);
  s.bind(5, r.hetVersion);
  s.bind(6, r.compiler);
  s.bind(7, r.choice);
  s.bind(8, r.seconds);
  s.bind(9, r.details);
  s.bind(10, r.measuredAt);
  if (sqlite3_step(s.stmt) != SQLITE_DONE)
    fail("cannot write the record for '" + r.workload + "'");
}

std::vector<Record> TuningDatabase::find(const std::string &kind, const std::string &workloadPrefix,
                                         const std::string &device, const std::string &host,
                                         const std::string &hetVersion) const {
  Statement s(db_, (std::string("SELECT ") + kColumns +
                    " FROM records WHERE kind = ? AND substr(workload, 1, ?) = ? AND device = ? "
                    "AND host = ? AND het_version = ? ORDER BY workload")
                       .c_str());
  if (s.status != SQLITE_OK)
    fail("cannot prepare a query");
  s.bind(1, kind);
  sqlite3_bind_int(s.stmt, 2, int(workloadPrefix.size()));
  s.bind(3, workloadPrefix);
  s.bind(4, device);
  s.bind(5, host);
  s.bind(6, hetVersion);
  return readAll(s);
}

std::vector<Record> TuningDatabase::all() const {
  Statement s(db_, (std::string("SELECT ") + kColumns +
                    " FROM records ORDER BY kind, workload, device, host, het_version, compiler")
                       .c_str());
  if (s.status != SQLITE_OK)
    fail("cannot prepare a query");
  return readAll(s);
}

std::string TuningDatabase::exportJson() const {
  nlohmann::ordered_json records = nlohmann::ordered_json::array();
  for (const Record &r : all()) {
    nlohmann::ordered_json details = nlohmann::ordered_json::parse(r.details, nullptr, false);
    records.push_back(
        {{"kind", r.kind},
         {"workload", r.workload},
         {"device", r.device},
         {"host", r.host},
         {"het_version", r.hetVersion},
         {"compiler", r.compiler},
         {"choice", r.choice},
         {"seconds", r.seconds},
         {"details", details.is_discarded() ? nlohmann::ordered_json(r.details) : details},
         {"measured_at", r.measuredAt}});
  }
  nlohmann::ordered_json document = {{"schema_version", kSchemaVersion}, {"records", records}};
  return document.dump(2) + "\n";
}

size_t TuningDatabase::importJson(const std::string &text) {
  // Ordered, so that details keep their order through export and import.
  nlohmann::ordered_json document = nlohmann::ordered_json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object())
    throw DatabaseError("the import is not a JSON object");
  if (!document.contains("schema_version") || document["schema_version"] != kSchemaVersion)
    throw DatabaseError("the import's schema_version is " +
                        (document.contains("schema_version") ? document["schema_version"].dump()
                                                             : std::string("missing")) +
                        "; this het reads " + std::to_string(kSchemaVersion));
  if (!document.contains("records") || !document["records"].is_array())
    throw DatabaseError("the import has no 'records' array");
  std::vector<Record> records;
  size_t index = 0;
  for (const auto &entry : document["records"]) {
    auto field = [&](const char *name) -> std::string {
      if (!entry.is_object() || !entry.contains(name) || !entry[name].is_string())
        throw DatabaseError("record " + std::to_string(index) + " of the import: '" + name +
                            "' is missing or not a string");
      return entry[name].get<std::string>();
    };
    Record r;
    r.kind = field("kind");
    r.workload = field("workload");
    r.device = field("device");
    r.host = field("host");
    r.hetVersion = field("het_version");
    r.compiler = field("compiler");
    r.choice = field("choice");
    r.measuredAt = field("measured_at");
    if (!entry.contains("seconds") || !entry["seconds"].is_number() ||
        !(entry["seconds"].get<double>() >= 0))
      throw DatabaseError("record " + std::to_string(index) +
                          " of the import: 'seconds' is missing or not a non-negative number");
    r.seconds = entry["seconds"].get<double>();
    r.details = entry.contains("details") ? entry["details"].dump() : "{}";
    records.push_back(std::move(r));
    ++index;
  }
  execute("BEGIN IMMEDIATE");
  try {
    for (const Record &r : records)
      put(r);
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  execute("COMMIT");
  return records.size();
}

std::string hostIdentity() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU", isa = "scalar";
  bool avx2 = false, avx512 = false, neon = false;
  while (std::getline(cpuinfo, line)) {
    auto value = [&] {
      size_t colon = line.find(':');
      return colon == std::string::npos ? std::string() : line.substr(colon + 2);
    };
    if (line.rfind("model name", 0) == 0 && model == "unknown CPU")
      model = value();
    if (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) {
      std::string flags = " " + value() + " ";
      avx2 |= flags.find(" avx2 ") != std::string::npos;
      avx512 |= flags.find(" avx512f ") != std::string::npos;
      neon |= flags.find(" asimd ") != std::string::npos;
    }
  }
  isa = avx512 ? "avx512" : avx2 ? "avx2" : neon ? "neon" : "scalar";
  return model + " (" + isa + ")";
}

std::string allReduceWorkloadPrefix(int ranks, int nodes, const std::string &link) {
  return "allreduce ranks=" + std::to_string(ranks) + " nodes=" + std::to_string(nodes) +
         " link=" + link + " bytes=";
}

std::string messageWorkloadPrefix(int ranks, const std::string &after) {
  return "message ranks=" + std::to_string(ranks) + " nodes=1 link=shm after=" + after +
         " bytes=";
}

std::string hetVersion() { return HET_VERSION_STRING; }

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm utc;
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

} // namespace het::tune
