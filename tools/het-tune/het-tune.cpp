//===- het-tune.cpp - measure once, record in the tuning database ----------===//
//
//   het-tune collectives -np 4 --db tune.db          measure, record
//   het-tune collectives -np 4 --db tune.db --check  auto (tuned) vs fixed
//   het-tune kernels model.mlir --db tune.db         dense layers' GEMM engines
//   het-tune kernels model.mlir --library mlir --db tune.db   generated contractions' tilings
//   het-tune stages model.mlir --cluster c.json --db tune.db  layer profiles, messages
//   het-tune show --db tune.db
//   het-tune export --db tune.db -o tune.json ; het-tune import --db other.db tune.json
//
// A thin driver over lib/Tune (docs/tuning.md).
//
//===----------------------------------------------------------------------===//

#include "het/Tune/CollectiveSweep.h"
#ifdef HET_TUNE_KERNELS
#include "Kernels.h"
#include "Stages.h"
#endif
#include "het/Tune/TuningDatabase.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace het::tune;

namespace {

uint64_t parseSize(const std::string &text) {
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception &) {
    throw CLI::ValidationError("--sizes", "'" + text + "' is not a size (4K, 1M, 65536)");
  }
  std::string suffix = text.substr(end);
  double scale = suffix.empty()                   ? 1
                 : suffix == "K" || suffix == "k" ? 1024
                 : suffix == "M" || suffix == "m" ? 1024.0 * 1024
                 : suffix == "G" || suffix == "g" ? 1024.0 * 1024 * 1024
                                                  : -1;
  if (scale < 0 || value <= 0 || value * scale < 4)
    throw CLI::ValidationError("--sizes", "'" + text + "' is not a size of at least 4 bytes");
  return uint64_t(value * scale) / 4 * 4;
}

std::string humanBytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
    std::snprintf(text, sizeof text, "%llu MiB", (unsigned long long)(bytes >> 20));
  else if (bytes >= 1024 && bytes % 1024 == 0)
    std::snprintf(text, sizeof text, "%llu KiB", (unsigned long long)(bytes >> 10));
  else
    std::snprintf(text, sizeof text, "%llu B", (unsigned long long)bytes);
  return text;
}

/// Bus bandwidth of an all-reduce, GB/s (nccl-tests' convention).
double busGBs(uint64_t bytes, int ranks, double seconds) {
  return seconds > 0 ? 2.0 * (ranks - 1) / ranks * double(bytes) / seconds / 1e9 : 0;
}

int collectives(int ranks, bool launched, const std::string &dbPath,
                const std::vector<std::string> &sizeTexts, int rounds, bool checkOnly, int waitMs) {
  SweepOptions options;
  options.ranks = ranks;
  options.rounds = rounds;
  for (const std::string &text : sizeTexts)
    options.sizes.push_back(parseSize(text));
  // The ranks' hetccl reads the database itself in a check, as a job's
  // would (rank 0 reads it at init); a sweep measures the algorithms, not
  // a previous table.
  if (checkOnly)
    setenv("HETCCL_TUNING_DB", dbPath.c_str(), 1);
  else
    unsetenv("HETCCL_TUNING_DB");
  options.includeAuto = checkOnly;
  // Launched: this process is one rank of a job (on any host); rank 0
  // reports and writes, the database need exist on its host only.
  std::unique_ptr<LaunchedSweepRank> launchedRank;
  if (launched) {
    launchedRank = std::make_unique<LaunchedSweepRank>(options.timeoutMs);
    ranks = launchedRank->ranks();
  }
  const bool reports = !launchedRank || launchedRank->rank() == 0;
  std::unique_ptr<TuningDatabase> db;
  std::string dbError;
  try {
    if (reports)
      db = TuningDatabase::open(
          dbPath, checkOnly ? TuningDatabase::Mode::ReadOnly : TuningDatabase::Mode::ReadWrite,
          waitMs);
  } catch (const std::exception &e) {
    dbError = e.what();
  }
  if (launchedRank && !launchedRank->allReady(dbError.empty()) && dbError.empty())
    dbError = "rank 0 cannot use the tuning database; nothing was measured";
  if (!dbError.empty())
    throw std::runtime_error(dbError);
  SweepResult result;
  if (launchedRank) {
    result = launchedRank->sweep(options);
    if (!reports)
      return 0;
  }
  std::printf("all-reduce, f32 sum, %d %s ranks, %d rounds; time per call (median round, "
              "slowest rank) and busbw\n",
              ranks, launchedRank ? "launched" : "local", rounds);
  if (!launchedRank)
    result = sweepAllReduce(options);
  std::printf("%s<size>  on %s, het %s\n", result.key.c_str(), hostIdentity().c_str(),
              hetVersion().c_str());
  bool allWithin = true, allFollowed = true;
  // What the database records for this communicator on this host, by size:
  // a check's auto must run exactly these (hetccl's rank 0 reads the same
  // records, Tuned.cpp).
  std::map<uint64_t, std::string> recorded;
  if (checkOnly)
    for (const Record &r :
         db->find("collective", result.key, "cpu", hostIdentity(), hetVersion()))
      recorded[std::stoull(r.workload.substr(result.key.size()))] = r.choice;
  for (const SizeResult &size : result.sizes) {
    const CandidateTime &best = size.best();
    std::printf("%9s ", humanBytes(size.bytes).c_str());
    for (const CandidateTime &c : size.candidates)
      std::printf(" %s %.1f us %.2f GB/s%s;", hetcclAlgoName(c.algo), c.seconds * 1e6,
                  busGBs(size.bytes, ranks, c.seconds), c.rounds < rounds ? " (dropped)" : "");
    if (checkOnly) {
      // auto against the best fixed algorithm, and against the fixed run of
      // the algorithm it chose (the same code: their ratio is the noise).
      // Judged paired by round (pairedRatio): the ratio of the two medians
      // also holds the drift between rounds, which put auto at 0.93-0.96x
      // of the very algorithm it ran at 2 ranks.
      const CandidateTime &tuned = *size.autoResult();
      double ratio = best.seconds / tuned.seconds;
      double paired = pairedRatio(best, tuned);
      allWithin &= paired >= 0.95;
      const CandidateTime *same = size.fixed(tuned.ran);
      auto record = recorded.find(size.bytes);
      std::string recordedChoice = record == recorded.end() ? "no record" : record->second;
      allFollowed &= recordedChoice == hetcclAlgoName(tuned.ran);
      std::printf("  auto ran %s (recorded: %s); auto/best fixed (%s): %.2fx paired, %.2fx of "
                  "medians",
                  hetcclAlgoName(tuned.ran), recordedChoice.c_str(), hetcclAlgoName(best.algo),
                  paired, ratio);
      if (same && same->rounds == rounds)
        std::printf("; auto/%s fixed: %.2fx paired, %.2fx of medians", hetcclAlgoName(tuned.ran),
                    pairedRatio(*same, tuned), same->seconds / tuned.seconds);
      std::printf("\n");
    } else {
      std::printf("  -> %s\n", hetcclAlgoName(best.algo));
      Record record;
      record.kind = "collective";
      record.workload = result.key + std::to_string(size.bytes);
      record.device = "cpu";
      record.host = hostIdentity();
      record.hetVersion = hetVersion();
      record.compiler = "";
      record.choice = hetcclAlgoName(best.algo);
      record.seconds = best.seconds;
      record.details = sweepDetails(size, rounds);
      record.measuredAt = utcNow();
      db->put(record);
    }
  }
  if (checkOnly) {
    // Two claims: the first is exact (the ranks' hetccl ran what the
    // database records; a check that finds otherwise fails), the second
    // is a timing and as noisy as the host (a benchmark's verdict, which
    // docs/tuning.md reports over several runs; not an exit status).
    std::printf("tuned auto ran the recorded algorithm at every size: %s\n",
                allFollowed ? "yes" : "no");
    std::printf("tuned auto within 0.95x of the best fixed algorithm at every size (paired by "
                "round): %s\n",
                allWithin ? "yes" : "no");
    if (!allFollowed)
      return 1;
  } else
    std::printf("%zu records written to %s\n", result.sizes.size(), dbPath.c_str());
  return 0;
}

/// a < b with runs of digits compared as numbers ("bytes=4096" before
/// "bytes=1048576"), so that show lists sizes in order.
bool naturalLess(const std::string &a, const std::string &b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie])))
        ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je])))
        ++je;
      unsigned long long x = std::stoull(a.substr(i, ie - i)), y = std::stoull(b.substr(j, je - j));
      if (x != y)
        return x < y;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j])
        return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

int show(const std::string &dbPath, int waitMs) {
  auto db = TuningDatabase::open(dbPath, TuningDatabase::Mode::ReadOnly, waitMs);
  auto records = db->all();
  std::stable_sort(records.begin(), records.end(), [](const Record &a, const Record &b) {
    return a.kind != b.kind ? a.kind < b.kind : naturalLess(a.workload, b.workload);
  });
  std::printf("%s: schema version %d, %zu records\n", dbPath.c_str(), kSchemaVersion,
              records.size());
  for (const Record &r : records)
    std::printf("%s | %s | %s | %s | het %s%s | %s %.3g s | %s\n", r.kind.c_str(),
                r.workload.c_str(), r.device.c_str(), r.host.c_str(), r.hetVersion.c_str(),
                r.compiler.empty() ? "" : (" | " + r.compiler).c_str(), r.choice.c_str(), r.seconds,
                r.measuredAt.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"het-tune: measure once and record the best choice in a tuning database "
               "(SQLite). Today: the all-reduce algorithm per message size, which hetccl's auto "
               "follows (HETCCL_TUNING_DB), the engine (oneDNN or OpenBLAS) of each dense "
               "layer's matrix products and the register tiling of each generated contraction "
               "(kernels --library mlir), which het-compile --tuning-db follows; het-compile "
               "also records --plan auto's calibrations there; each layer's time per local "
               "device kind and micro-batch and the latency of messages between a cluster's "
               "ranks on this host (stages), which het-plan and het-compile --tuning-db price "
               "plans by. See docs/tuning.md.",
               "het-tune"};
  app.require_subcommand(1);
  std::string dbPath;
  int waitMs = 5000;
  app.add_option("--wait-ms", waitMs,
                 "how long to wait for another process's lock on the "
                 "database (default 5000)")
      ->check(CLI::Range(0, 600000));

  auto *coll = app.add_subcommand("collectives", "time every all-reduce algorithm at each size "
                                                 "on local ranks (or the ranks of a launched "
                                                 "job); record the fastest");
  int ranks = 2, rounds = 15;
  bool check = false, launched = false;
  std::vector<std::string> sizes = {"4K", "16K", "64K", "256K", "1M", "4M", "16M", "64M"};
  auto *npOption = coll->add_option("-n,--np", ranks, "local ranks (default 2; -np N works too)")
                       ->check(CLI::Range(2, 64));
  coll->add_flag("--launched", launched,
                 "this process is one rank of a job started by a launcher "
                 "(het-run, mpirun, srun: RANK, WORLD_SIZE, HETCCL_ROOT, HETCCL_TOKEN), "
                 "across hosts; rank 0 prints and writes --db")
      ->excludes(npOption);
  coll->add_option("--db", dbPath, "the tuning database (created if missing)")->required();
  coll->add_option("--sizes", sizes, "message sizes (default 4K,16K,...,64M)")->delimiter(',');
  coll->add_option("--rounds", rounds, "interleaved rounds (default 15)")->check(CLI::Range(1, 100));
  coll->add_flag("--check", check,
                 "write nothing: time auto as tuned by --db against every "
                 "fixed algorithm");

#ifdef HET_TUNE_KERNELS
  KernelsCommand kernels;
  addKernelsCommand(app, kernels);
  StagesCommand stages;
  addStagesCommand(app, stages);
#endif

  auto *showCommand = app.add_subcommand("show", "list the records of a database");
  showCommand->add_option("--db", dbPath, "the tuning database")->required();

  std::string output, input;
  auto *exportCommand = app.add_subcommand("export", "write a database's records as JSON");
  exportCommand->add_option("--db", dbPath, "the tuning database")->required();
  exportCommand->add_option("-o,--output", output, "JSON file (default: standard output)");

  auto *importCommand = app.add_subcommand("import", "add the records of an exported JSON file "
                                                     "(replacing those with the same key)");
  importCommand->add_option("--db", dbPath, "the tuning database (created if missing)")->required();
  importCommand->add_option("file", input, "JSON file from het-tune export")
      ->required()
      ->check(CLI::ExistingFile);

  // "-np 4" as mpirun and nccl-tests spell it (CLI11's short options are
  // one letter).
  std::vector<std::string> arguments(argv + 1, argv + argc);
  for (std::string &argument : arguments)
    if (argument == "-np")
      argument = "--np";
  std::reverse(arguments.begin(), arguments.end());
  try {
    app.parse(arguments);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  try {
    if (coll->parsed())
      return collectives(ranks, launched, dbPath, sizes, rounds, check, waitMs);
#ifdef HET_TUNE_KERNELS
    if (kernels.command->parsed())
      return runKernels(kernels, waitMs);
    if (stages.command->parsed())
      return runStages(stages, waitMs);
#endif
    if (showCommand->parsed())
      return show(dbPath, waitMs);
    if (exportCommand->parsed()) {
      auto db = TuningDatabase::open(dbPath, TuningDatabase::Mode::ReadOnly, waitMs);
      std::string text = db->exportJson();
      if (output.empty()) {
        std::fputs(text.c_str(), stdout);
      } else {
        std::ofstream out(output);
        if (!(out << text))
          throw DatabaseError("cannot write '" + output + "'");
      }
      return 0;
    }
    if (importCommand->parsed()) {
      std::ifstream in(input);
      std::stringstream text;
      text << in.rdbuf();
      auto db = TuningDatabase::open(dbPath, TuningDatabase::Mode::ReadWrite, waitMs);
      size_t n = db->importJson(text.str());
      std::printf("%zu records imported into %s\n", n, dbPath.c_str());
      return 0;
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "het-tune: %s\n", e.what());
    return 1;
  }
  return 0;
}
