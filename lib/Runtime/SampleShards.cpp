//===- SampleShards.cpp - a classifier's samples in .npy shards -----------===//

#include "SampleShards.h"

#include "ModelInfo.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace het::rt {

bool isSampleShards(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

namespace {

/// The shards of `folder` by their key: x-KEY.npy and y-KEY.npy.
std::map<std::string, std::string> shardFiles(const std::string &folder, char array) {
  std::map<std::string, std::string> files;
  DIR *dir = ::opendir(folder.c_str());
  if (!dir)
    die("--data " + folder + ": " + std::strerror(errno));
  while (dirent *entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.size() > 6 && name[0] == array && name[1] == '-' &&
        name.compare(name.size() - 4, 4, ".npy") == 0)
      files.emplace(name.substr(2, name.size() - 6), folder + "/" + name);
  }
  ::closedir(dir);
  return files;
}

bool isLabelType(const std::string &dtype) {
  return dtype == "i1" || dtype == "i2" || dtype == "i4" || dtype == "i8" || dtype == "u1";
}

int64_t label(const char *at, size_t width) {
  switch (width) {
  case 1: {
    int8_t v;
    std::memcpy(&v, at, 1);
    return v;
  }
  case 2: {
    int16_t v;
    std::memcpy(&v, at, 2);
    return v;
  }
  case 4: {
    int32_t v;
    std::memcpy(&v, at, 4);
    return v;
  }
  default: {
    int64_t v;
    std::memcpy(&v, at, 8);
    return v;
  }
  }
}

} // namespace

SampleShards::Shard SampleShards::map(const std::string &path) {
  Shard s{MappedFile(path, "--data"), {}};
  auto header = eval::parseNpyHeader(llvm::StringRef(s.file.bytes(), s.file.size()), path);
  if (!header)
    die("--data " + llvm::toString(header.takeError()));
  s.header = *header;
  size_t needed = s.header.dataOffset + size_t(s.header.numElements()) * s.header.width;
  if (s.file.size() != needed)
    die("--data " + path + ": holds " + std::to_string(s.file.size()) +
        " bytes, but its header (" + eval::shapeString(s.header.shape) + " of '" +
        s.header.dtype + "') needs " + std::to_string(needed) +
        (s.file.size() < needed ? " (truncated?)" : ""));
  s.file.advise(MADV_RANDOM);
  return s;
}

SampleShards::SampleShards(const std::string &folder, const TensorInfo &data,
                           const TensorInfo &labels, int64_t batch, int64_t classes,
                           long long seed)
    : sampleSize_(data.count() / batch), seed_(static_cast<uint64_t>(seed)),
      readAhead_([this](int64_t first, int64_t count) {
        for (int64_t g = first; g < first + count; ++g) {
          auto [k, row] = locate(item(static_cast<uint64_t>(g)));
          size_t bytes = size_t(sampleSize_) * sizeof(float);
          x_[k].file.willNeed(x_[k].header.dataOffset + size_t(row) * bytes, bytes);
        }
      }) {
  if (labels.count() != batch)
    die("--data needs a model with one label per sample; " + labels.name + " is " +
        shapeText(labels.shape));
  std::map<std::string, std::string> xs = shardFiles(folder, 'x'), ys = shardFiles(folder, 'y');
  if (xs.empty())
    die("--data " + folder + ": a folder of sample shards needs x-K.npy (samples) and y-K.npy "
        "(labels) files; it has none (python -m het.data shard writes them)");
  for (const auto &[key, path] : ys)
    if (!xs.count(key))
      die("--data " + path + ": labels without samples (no x-" + key + ".npy beside it)");
  std::vector<int64_t> sampleShape(data.shape.begin() + (data.shape.empty() ? 0 : 1),
                                   data.shape.end());
  starts_.push_back(0);
  for (const auto &[key, path] : xs) {
    auto y = ys.find(key);
    if (y == ys.end())
      die("--data " + path + ": samples without labels (no y-" + key + ".npy beside it)");
    Shard x = map(path), labelsShard = map(y->second);
    const eval::NpyHeader &hx = x.header, &hy = labelsShard.header;
    int64_t rows = hx.shape.empty() ? 0 : hx.shape[0];
    if (hx.dtype != "f4" || hx.shape.empty() || hx.numElements() != rows * sampleSize_)
      die("--data " + path + ": is '" + hx.dtype + "' " + eval::shapeString(hx.shape) +
          ", but the model takes float32 samples of " + std::to_string(sampleSize_) +
          " values (its argument " + data.name + " is " + shapeText(data.shape) +
          "; a shard holds n samples of shape " + eval::shapeString(sampleShape) + ")");
    if (!isLabelType(hy.dtype) || hy.shape.size() != 1 || hy.shape[0] != rows)
      die("--data " + y->second + ": labels must be one integer per sample of " + path + " (" +
          std::to_string(rows) + "), got '" + hy.dtype + "' " + eval::shapeString(hy.shape));
    // Every label within the model's classes, checked once before training:
    // a cross-entropy would read past its logits.
    for (int64_t r = 0; r < rows; ++r) {
      int64_t v = label(labelsShard.data() + r * hy.width, hy.width);
      if (v < 0 || (classes > 0 && v >= classes))
        die("--data " + y->second + ": label " + std::to_string(r) + " is " + std::to_string(v) +
            (classes > 0 ? ", outside the model's " + std::to_string(classes) + " classes"
                         : ", a negative class"));
    }
    x_.push_back(std::move(x));
    y_.push_back(std::move(labelsShard));
    starts_.push_back(starts_.back() + rows);
  }
  total_ = starts_.back();
  if (total_ == 0)
    die("--data " + folder + ": its shards hold no samples");
}

uint64_t SampleShards::item(uint64_t g) const {
  uint64_t n = static_cast<uint64_t>(total_);
  return permuteSample(g % n, n, seed_, g / n);
}

std::pair<size_t, int64_t> SampleShards::locate(uint64_t item) const {
  auto next = std::upper_bound(starts_.begin(), starts_.end(), static_cast<int64_t>(item));
  size_t k = static_cast<size_t>(next - starts_.begin()) - 1;
  return {k, static_cast<int64_t>(item) - starts_[k]};
}

void SampleShards::fillSamples(int64_t first, int64_t count, float *x, int64_t *y) {
  for (int64_t b = 0; b < count; ++b) {
    uint64_t g = static_cast<uint64_t>(first + b), i = item(g);
    auto [k, row] = locate(i);
    std::memcpy(x + b * sampleSize_, x_[k].data() + row * sampleSize_ * sizeof(float),
                sampleSize_ * sizeof(float));
    y[b] = label(y_[k].data() + row * y_[k].header.width, y_[k].header.width);
    log_.sample(g, "item", i);
  }
}

std::unique_ptr<SampleShards> openSampleShards(const std::string &folder, const ModelInfo &info,
                                               int dataInput, int labelInput,
                                               int64_t needed, const std::string &what,
                                               long long seed, const std::string &logSamples,
                                               int rank) {
  if (dataInput < 0 || labelInput < 0)
    die("--data needs a model with exactly one float data argument and one label argument");
  const TensorInfo &data = info.inputs[dataInput], &labels = info.inputs[labelInput];
  auto shards = std::make_unique<SampleShards>(folder, data, labels,
                                               data.shape.empty() ? 1 : data.shape[0],
                                               classesOf(labels), seed);
  if (shards->samples() < needed)
    die(folder + " holds " + std::to_string(shards->samples()) + " samples, fewer than " + what);
  if (!logSamples.empty())
    shards->logSamples(logSamples, rank);
  return shards;
}

} // namespace het::rt
