//===- Store.cpp - the on-disk checkpoint format, write and resume --------===//
#include "het/Checkpoint/Store.h"
#include "het/Checkpoint/AtomicFile.h"
#include "het/Checkpoint/Hash.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>

namespace het::ckpt {

using json = nlohmann::json;

namespace {
constexpr char kMagic[8] = {'H', 'E', 'T', 'C', 'K', 'P', 'T', '1'};
constexpr uint64_t kAlign = 64; // tensors start on cache-line boundaries

std::string stepName(int64_t step, const char *ext) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "step-%09lld.%s", (long long)step, ext);
  return buf;
}

std::string readWholeFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError("cannot open " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The manifest of `step`, its own checksum verified.
json readManifest(const std::string &dir, int64_t step) {
  std::string text = readWholeFile(dir + "/" + stepName(step, "json"));
  json m;
  try {
    m = json::parse(text);
  } catch (const std::exception &e) {
    throw CheckpointError("manifest is not valid JSON (truncated?): " + std::string(e.what()));
  }
  if (!m.is_object() || !m.contains("body") || !m.contains("manifest_sha256"))
    throw CheckpointError("manifest lacks 'body' or 'manifest_sha256'");
  const json &body = m["body"];
  std::string want = m["manifest_sha256"].get<std::string>();
  std::string dumped = body.dump();
  if (sha256Hex(dumped.data(), dumped.size()) != want)
    throw CheckpointError("bad checksum: manifest sha256 does not match its contents");
  if (body.value("format", "") != "het-checkpoint" || body.value("version", 0) != 1)
    throw CheckpointError("not a het-checkpoint version 1 manifest");
  if (body.value("step", int64_t(-1)) != step)
    throw CheckpointError("manifest names step " + std::to_string(body.value("step", -1)));
  return body;
}

/// The verified data file of a manifest.
std::string readData(const std::string &dir, const json &body) {
  std::string file = body.at("data_file").get<std::string>();
  if (file.find('/') != std::string::npos)
    throw CheckpointError("data file name '" + file + "' has a '/'");
  std::string path = dir + "/" + file;
  std::string data;
  try {
    data = readWholeFile(path);
  } catch (const CheckpointError &) {
    throw CheckpointError("data file " + file + " is missing");
  }
  uint64_t want = body.at("data_bytes").get<uint64_t>();
  if (data.size() != want)
    throw CheckpointError("truncated: " + file + " has " + std::to_string(data.size()) +
                          " bytes, the manifest says " + std::to_string(want));
  if (data.size() < sizeof kMagic || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    throw CheckpointError(file + " does not start with the checkpoint magic");
  if (sha256Hex(data.data(), data.size()) != body.at("data_sha256").get<std::string>())
    throw CheckpointError("bad checksum: " + file + " sha256 does not match the manifest");
  return data;
}

json shardJson(const Shard &s) {
  json j = {{"axis", s.axis}, {"begin", s.begin}, {"end", s.end}, {"whole", s.whole}};
  if (s.hasRows())
    j["rows"] = {s.rowBegin, s.rowEnd};
  return j;
}

Shard shardFrom(const json &t) {
  Shard s;
  if (!t.contains("shard"))
    return s;
  const json &j = t.at("shard");
  s.axis = j.at("axis").get<int>();
  s.begin = j.at("begin").get<int64_t>();
  s.end = j.at("end").get<int64_t>();
  s.whole = j.at("whole").get<std::vector<int64_t>>();
  if (j.contains("rows")) {
    auto rows = j.at("rows").get<std::vector<int64_t>>();
    if (rows.size() != 2 || rows[0] < 0 || rows[1] < rows[0])
      throw CheckpointError("tensor '" + t.at("name").get<std::string>() +
                            "' has a shard whose rows are not [begin, end]");
    s.rowBegin = rows[0];
    s.rowEnd = rows[1];
  }
  if (s.axis < 0)
    throw CheckpointError("tensor '" + t.at("name").get<std::string>() +
                          "' has a shard of negative axis");
  return s;
}

/// A manifest entry's dtype, shape and shard (no bytes).
Tensor describedBy(const json &t) {
  Tensor out;
  out.dtype = t.at("dtype").get<std::string>();
  out.shape = t.at("shape").get<std::vector<int64_t>>();
  out.shard = shardFrom(t);
  return out;
}

Tensor tensorFrom(const json &t, const std::string &data, const std::string &where) {
  std::string name = t.at("name").get<std::string>();
  Tensor out = describedBy(t);
  uint64_t off = t.at("offset").get<uint64_t>(), n = t.at("nbytes").get<uint64_t>();
  if (off > data.size() || n > data.size() - off)
    throw CheckpointError("tensor '" + name + "' lies outside " + where);
  out.bytes.assign(data.begin() + off, data.begin() + off + n);
  out.check(name);
  if (sha256Hex(out.bytes.data(), out.bytes.size()) != t.at("sha256").get<std::string>())
    throw CheckpointError("bad checksum: tensor '" + name + "' in " + where);
  return out;
}
} // namespace

SaveInfo writeCheckpoint(const std::string &dir, int64_t step, const Snapshot &snap,
                         int64_t base, const HashMap *baseHashes, HashMap *hashesOut) {
  auto t0 = std::chrono::steady_clock::now();
  if (step < 0) throw CheckpointError("checkpoint step must be >= 0, got " + std::to_string(step));
  makeDirs(dir);
  bool incremental = base >= 0 && baseHashes;
  SaveInfo info;
  info.step = step;
  info.full = !incremental;
  info.base = incremental ? base : -1;

  static const char zeros[kAlign] = {};
  std::vector<Piece> pieces{{kMagic, sizeof kMagic}};
  uint64_t offset = sizeof kMagic;
  json tensors = json::array();
  HashMap hashes;
  for (auto &[name, t] : snap.tensors) {
    t.check(name);
    std::string h = sha256Hex(t.bytes.data(), t.bytes.size());
    hashes[name] = h;
    json e = {{"name", name}, {"dtype", t.dtype}, {"shape", t.shape},
              {"nbytes", t.bytes.size()}, {"sha256", h}};
    if (t.shard.present())
      e["shard"] = shardJson(t.shard);
    auto it = incremental ? baseHashes->find(name) : HashMap::const_iterator();
    if (incremental && it != baseHashes->end() && it->second == h) {
      e["in_step"] = base; // unchanged since the full checkpoint
      ++info.tensorsReused;
    } else {
      uint64_t pad = (kAlign - offset % kAlign) % kAlign;
      if (pad) pieces.push_back({zeros, pad});
      offset += pad;
      e["offset"] = offset;
      pieces.push_back({t.bytes.data(), t.bytes.size()});
      offset += t.bytes.size();
      ++info.tensorsStored;
    }
    tensors.push_back(std::move(e));
  }
  // The data file's checksum: hash the pieces as they will be written (no
  // staging copy of the whole file).
  Sha256 fileHash;
  for (const Piece &p : pieces) fileHash.update(p.data, p.size);
  std::string dataName = stepName(step, "bin");
  writeFileAtomic(dir, dataName, pieces);
  uint64_t dataBytes = offset;
  std::string dataSha = fileHash.hex();

  json body = {{"format", "het-checkpoint"}, {"version", 1}, {"step", step},
               {"kind", incremental ? "incremental" : "full"}, {"base", info.base},
               {"data_file", dataName}, {"data_bytes", dataBytes},
               {"data_sha256", dataSha}, {"tensors", tensors}};
  if (!snap.meta.empty())
    body["meta"] = snap.meta;
  std::string dumped = body.dump();
  json manifest = {{"body", body}, {"manifest_sha256", sha256Hex(dumped.data(), dumped.size())}};
  std::string text = manifest.dump(1) + "\n";
  // The manifest last: its appearance commits the checkpoint.
  writeFileAtomic(dir, stepName(step, "json"), {{text.data(), text.size()}});

  info.bytesWritten = dataBytes + text.size();
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (hashesOut) *hashesOut = std::move(hashes);
  return info;
}

std::vector<int64_t> listSteps(const std::string &dir) {
  std::vector<int64_t> steps;
  DIR *d = ::opendir(dir.c_str());
  if (!d) return steps;
  while (dirent *e = ::readdir(d)) {
    long long s = -1;
    char tail[8] = {};
    std::string n = e->d_name;
    if (n.size() == std::strlen("step-000000000.json") &&
        std::sscanf(n.c_str(), "step-%9lld.%4s", &s, tail) == 2 && std::string(tail) == "json")
      steps.push_back(s);
  }
  ::closedir(d);
  std::sort(steps.begin(), steps.end());
  return steps;
}

Snapshot loadCheckpoint(const std::string &dir, int64_t step, bool *full, int64_t *base) {
  json body = readManifest(dir, step);
  std::string data = readData(dir, body);
  std::string kind = body.at("kind").get<std::string>();
  int64_t b = body.at("base").get<int64_t>();
  if (full) *full = kind == "full";
  if (base) *base = b;
  std::string baseData;
  json baseBody;
  if (kind == "incremental") {
    if (b < 0 || b >= step) throw CheckpointError("increment has an invalid base step");
    try {
      baseBody = readManifest(dir, b);
      if (baseBody.at("kind") != "full") throw CheckpointError("it is not a full checkpoint");
      baseData = readData(dir, baseBody);
    } catch (const CheckpointError &e) {
      throw CheckpointError("missing or invalid base: full checkpoint " + std::to_string(b) +
                            " of this increment: " + e.what());
    }
  } else if (kind != "full") {
    throw CheckpointError("unknown checkpoint kind '" + kind + "'");
  }
  Snapshot snap;
  for (const json &t : body.at("tensors")) {
    std::string name = t.at("name").get<std::string>();
    if (t.contains("in_step")) {
      // Stored in the base: find it there and check it is the same content.
      const json *bt = nullptr;
      if (!baseBody.is_null())
        for (const json &x : baseBody.at("tensors"))
          if (x.at("name") == name) bt = &x;
      if (!bt || bt->at("sha256") != t.at("sha256"))
        throw CheckpointError("tensor '" + name + "' is not in its base checkpoint " +
                              std::to_string(b) + " with the recorded hash");
      Tensor &stored = snap.tensors[name] = tensorFrom(*bt, baseData, stepName(b, "bin"));
      stored.shard = shardFrom(t); // as this step describes it
      stored.check(name);
    } else {
      snap.tensors[name] = tensorFrom(t, data, stepName(step, "bin"));
    }
  }
  if (body.contains("meta"))
    snap.meta = body.at("meta").get<std::map<std::string, std::string>>();
  return snap;
}

Snapshot describeCheckpoint(const std::string &dir, int64_t step) {
  json body = readManifest(dir, step);
  Snapshot snap;
  try {
    for (const json &t : body.at("tensors")) {
      std::string name = t.at("name").get<std::string>();
      Tensor &d = snap.tensors[name] = describedBy(t);
      d.checkShard(name);
    }
    if (body.contains("meta"))
      snap.meta = body.at("meta").get<std::map<std::string, std::string>>();
  } catch (const nlohmann::json::exception &e) {
    throw CheckpointError(std::string("manifest has a malformed entry: ") + e.what());
  }
  return snap;
}

ResumeResult resumeLatest(const std::string &dir, int64_t maxStep) {
  ResumeResult r;
  std::vector<int64_t> steps = listSteps(dir);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (maxStep >= 0 && *it > maxStep) continue;
    try {
      r.snapshot = loadCheckpoint(dir, *it, &r.full, &r.base);
      r.found = true;
      r.step = *it;
      return r;
    } catch (const std::exception &e) {
      r.skipped.push_back({*it, e.what()});
    }
  }
  return r;
}

std::string ResumeResult::report() const {
  std::string s;
  for (const Skipped &k : skipped)
    s += "skipped checkpoint step " + std::to_string(k.step) + ": " + k.reason + "\n";
  return s;
}

} // namespace het::ckpt
