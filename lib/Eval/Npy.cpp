//===- Npy.cpp - NumPy .npy and .npz files ---------------------------------===//
//
// .npy is a small header (a Python dict literal with 'descr', 'fortran_order'
// and 'shape') followed by raw data; we parse just that dict. .npz is a zip
// archive of .npy members, possibly deflated: libzip handles the archive.
//
//===----------------------------------------------------------------------===//

#include "het/Eval/Npy.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <zip.h>

#include <cmath>
#include <cstring>
#include <memory>

using llvm::StringRef;

namespace het::eval {

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text + "]";
}

int64_t HostArray::numElements() const { return eval::numElements(shape); }

std::string HostArray::describe() const {
  const char *name = kind == ElementKind::F32 ? "f32"
                     : kind == ElementKind::F64 ? "f64"
                                                : "i64";
  return name + shapeString(shape);
}

namespace {

llvm::Error fail(const std::string &source, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 source + ": " + message.str());
}

/// Value of `key` in the header dict, e.g. `'descr': '<f4'` -> `'<f4'`.
std::optional<StringRef> headerValue(StringRef header, StringRef key) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == StringRef::npos)
    return std::nullopt;
  StringRef rest = header.drop_front(at + key.size() + 2).ltrim();
  if (!rest.consume_front(":"))
    return std::nullopt;
  rest = rest.ltrim();
  if (rest.starts_with("(")) {
    size_t end = rest.find(')');
    return end == StringRef::npos ? std::nullopt
                                  : std::optional(rest.take_front(end + 1));
  }
  size_t end = rest.find_first_of(",}");
  return rest.take_front(end).rtrim();
}

float halfToFloat(uint16_t half) {
  uint32_t sign = (half >> 15) & 1, exponent = (half >> 10) & 0x1f,
           mantissa = half & 0x3ff;
  float value;
  if (exponent == 0)
    value = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    value = mantissa ? NAN : INFINITY;
  else
    value = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  return sign ? -value : value;
}

/// Converts `count` little-endian `Source` values (unaligned) into `out`.
template <typename Source, typename Target>
void readInto(const char *data, int64_t count, std::vector<Target> &out) {
  out.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    Source value;
    std::memcpy(&value, data + i * sizeof(Source), sizeof(Source));
    out[i] = static_cast<Target>(value);
  }
}

} // namespace

int64_t NpyHeader::numElements() const { return eval::numElements(shape); }

llvm::Expected<NpyHeader> parseNpyHeader(StringRef bytes, const std::string &source) {
  static const char magic[] = "\x93NUMPY";
  if (bytes.size() < 10 || !bytes.starts_with(StringRef(magic, 6)))
    return fail(source, "not a .npy file (bad magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = static_cast<unsigned char>(bytes[8]) |
                   (static_cast<unsigned char>(bytes[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail(source, "truncated .npy header");
    headerLength = 0;
    for (int i = 0; i < 4; ++i)
      headerLength |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    return fail(source, "unsupported .npy version " + std::to_string(major));
  }
  if (bytes.size() < headerStart + headerLength)
    return fail(source, "truncated .npy header");
  StringRef header(bytes.data() + headerStart, headerLength);

  auto descr = headerValue(header, "descr");
  auto fortran = headerValue(header, "fortran_order");
  auto shapeText = headerValue(header, "shape");
  if (!descr || !fortran || !shapeText)
    return fail(source, "malformed .npy header '" + header.trim().str() + "'");
  if (*fortran != "False")
    return fail(source, "Fortran-order arrays are not supported (save with np.ascontiguousarray)");

  NpyHeader h;
  StringRef dims = shapeText->trim("() ");
  llvm::SmallVector<StringRef> parts;
  dims.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      continue;
    int64_t size;
    if (part.getAsInteger(10, size) || size < 0)
      return fail(source, "bad dimension '" + part.str() + "' in shape " + shapeText->str());
    h.shape.push_back(size);
  }

  StringRef type = descr->trim("' \"");
  if (type.size() < 3)
    return fail(source, "unsupported dtype '" + type.str() + "'");
  char order = type[0];
  if (order == '>')
    return fail(source, "big-endian arrays are not supported (dtype '" + type.str() + "')");
  h.dtype = type.drop_front(1).str();
  static const std::map<std::string, size_t> widths = {
      {"f2", 2}, {"f4", 4}, {"f8", 8}, {"i1", 1}, {"i2", 2}, {"i4", 4},
      {"i8", 8}, {"u1", 1}, {"b1", 1}};
  auto width = widths.find(h.dtype);
  if (width == widths.end())
    return fail(source, "unsupported dtype '" + type.str() +
                            "' (use float16/32/64, int8/16/32/64, uint8 or bool)");
  h.width = width->second;
  h.dataOffset = headerStart + headerLength;
  return h;
}

llvm::Expected<HostArray> parseNpy(const std::string &bytes, const std::string &source) {
  auto header = parseNpyHeader(bytes, source);
  if (!header)
    return header.takeError();
  HostArray array;
  array.shape = header->shape;
  int64_t count = array.numElements();
  size_t dataStart = header->dataOffset;
  StringRef code = header->dtype;
  if (bytes.size() - dataStart != static_cast<size_t>(count) * header->width)
    return fail(source, "data holds " + std::to_string(bytes.size() - dataStart) +
                            " bytes but shape " + shapeString(array.shape) + " of '" +
                            code.str() + "' needs " + std::to_string(count * header->width));
  const char *data = bytes.data() + dataStart;
  if (code == "f2") {
    array.kind = ElementKind::F32;
    array.floats.resize(count);
    for (int64_t i = 0; i < count; ++i) {
      uint16_t half;
      std::memcpy(&half, data + 2 * i, 2);
      array.floats[i] = halfToFloat(half);
    }
  } else if (code == "f4") {
    array.kind = ElementKind::F32;
    readInto<float>(data, count, array.floats);
  } else if (code == "f8") {
    array.kind = ElementKind::F64;
    readInto<double>(data, count, array.floats);
  } else {
    array.kind = ElementKind::I64;
    if (code == "i1") readInto<int8_t>(data, count, array.integers);
    else if (code == "i2") readInto<int16_t>(data, count, array.integers);
    else if (code == "i4") readInto<int32_t>(data, count, array.integers);
    else if (code == "i8") readInto<int64_t>(data, count, array.integers);
    else readInto<uint8_t>(data, count, array.integers); // u1, b1
  }
  return array;
}

std::string serializeNpy(const HostArray &array) {
  const char *descr = array.kind == ElementKind::F32 ? "<f4"
                      : array.kind == ElementKind::F64 ? "<f8"
                                                       : "<i8";
  std::string shape = "(";
  for (int64_t size : array.shape)
    shape += std::to_string(size) + ",";
  if (array.shape.size() > 1)
    shape.pop_back(); // (3,) for rank 1, (2,3) otherwise
  shape += ")";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, ending in '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  int64_t count = array.numElements();
  if (array.kind == ElementKind::F32) {
    for (int64_t i = 0; i < count; ++i) {
      float value = static_cast<float>(array.floats[i]);
      bytes.append(reinterpret_cast<const char *>(&value), 4);
    }
  } else if (array.kind == ElementKind::F64) {
    for (int64_t i = 0; i < count; ++i) {
      double value = static_cast<double>(array.floats[i]);
      bytes.append(reinterpret_cast<const char *>(&value), 8);
    }
  } else {
    bytes.append(reinterpret_cast<const char *>(array.integers.data()), 8 * count);
  }
  return bytes;
}

llvm::Expected<HostArray> readNpy(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(path, "cannot read: " + buffer.getError().message());
  return parseNpy((*buffer)->getBuffer().str(), path);
}

/// Writes `bytes` to a temporary beside `path`, then renames it over `path`,
/// so a reader never sees half a file.
static llvm::Error writeAtomically(const std::string &path, const std::string &bytes) {
  std::string temporary = path + ".tmp";
  {
    std::error_code error;
    llvm::raw_fd_ostream out(temporary, error);
    if (error)
      return fail(path, "cannot write: " + error.message());
    out << bytes;
    out.close();
    if (out.has_error())
      return fail(path, "write failed: " + out.error().message());
  }
  if (std::error_code error = llvm::sys::fs::rename(temporary, path))
    return fail(path, "cannot rename temporary file: " + error.message());
  return llvm::Error::success();
}

llvm::Error writeNpy(const std::string &path, const HostArray &array) {
  return writeAtomically(path, serializeNpy(array));
}

llvm::Expected<NamedArrays> readNpz(const std::string &path) {
  int errorCode = 0;
  std::unique_ptr<zip_t, int (*)(zip_t *)> archive(
      zip_open(path.c_str(), ZIP_RDONLY, &errorCode), zip_close);
  if (!archive) {
    zip_error_t error;
    zip_error_init_with_code(&error, errorCode);
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    return fail(path, "cannot open as .npz (zip): " + message);
  }
  NamedArrays arrays;
  zip_int64_t entries = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    zip_stat_t stat;
    if (zip_stat_index(archive.get(), i, 0, &stat) != 0)
      return fail(path, "cannot read entry #" + std::to_string(i) + ": " +
                            zip_strerror(archive.get()));
    std::string name = stat.name;
    std::string source = path + ":" + name;
    StringRef key(name);
    if (!key.consume_back(".npy"))
      return fail(source, "member is not a .npy array");
    std::unique_ptr<zip_file_t, int (*)(zip_file_t *)> file(
        zip_fopen_index(archive.get(), i, 0), zip_fclose);
    if (!file)
      return fail(source, std::string("cannot open member: ") + zip_strerror(archive.get()));
    std::string bytes(stat.size, '\0');
    zip_int64_t got = zip_fread(file.get(), bytes.data(), stat.size);
    if (got < 0 || static_cast<zip_uint64_t>(got) != stat.size)
      return fail(source, std::string("truncated or corrupt member: ") +
                              zip_file_strerror(file.get()));
    auto array = parseNpy(bytes, source);
    if (!array)
      return array.takeError();
    arrays.emplace_back(key.str(), std::move(*array));
  }
  return arrays;
}

llvm::Error writeNpz(const std::string &path, const NamedArrays &arrays) {
  std::string temporary = path + ".tmp";
  int errorCode = 0;
  zip_t *archive = zip_open(temporary.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &errorCode);
  if (!archive)
    return fail(path, "cannot create archive");
  // libzip reads the sources at zip_close, so the bytes must outlive the loop.
  std::vector<std::string> payloads;
  payloads.reserve(arrays.size());
  for (const auto &[name, array] : arrays) {
    payloads.push_back(serializeNpy(array));
    zip_source_t *source =
        zip_source_buffer(archive, payloads.back().data(), payloads.back().size(), 0);
    if (!source || zip_file_add(archive, (name + ".npy").c_str(), source,
                                ZIP_FL_OVERWRITE | ZIP_FL_ENC_UTF_8) < 0) {
      std::string message = zip_strerror(archive);
      if (source)
        zip_source_free(source);
      zip_discard(archive);
      return fail(path, "cannot add '" + name + "': " + message);
    }
  }
  if (zip_close(archive) != 0) {
    std::string message = zip_strerror(archive);
    zip_discard(archive);
    return fail(path, "cannot write archive: " + message);
  }
  if (std::error_code error = llvm::sys::fs::rename(temporary, path))
    return fail(path, "cannot rename temporary file: " + error.message());
  return llvm::Error::success();
}

} // namespace het::eval
