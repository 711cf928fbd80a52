//===- JsonUtil.cpp -------------------------------------------------------===//
#include "JsonUtil.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace het::plan::json_util {

json readFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    fail(path, "", "cannot open file");
  try {
    return json::parse(in);
  } catch (const json::parse_error &e) {
    fail(path, "", std::string("not valid JSON: ") + e.what());
  }
}

std::string join(const std::string &path, const std::string &key) {
  return path.empty() ? key : path + "." + key;
}
std::string join(const std::string &path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

const json &field(const json &obj, const std::string &key,
                  const std::string &file, const std::string &path) {
  if (!obj.is_object())
    fail(file, path.empty() ? "(top level)" : path, "must be an object");
  auto it = obj.find(key);
  if (it == obj.end())
    fail(file, join(path, key), "missing");
  return *it;
}

double number(const json &obj, const std::string &key, const std::string &file,
              const std::string &path) {
  const json &v = field(obj, key, file, path);
  if (!v.is_number())
    fail(file, join(path, key), "must be a number, not " + v.dump());
  double d = v.get<double>();
  if (!std::isfinite(d))
    fail(file, join(path, key), "must be finite");
  return d;
}

double numberOr(const json &obj, const std::string &key, double fallback,
                const std::string &file, const std::string &path) {
  if (!obj.is_object() || !obj.contains(key))
    return fallback;
  return number(obj, key, file, path);
}

double positive(const json &obj, const std::string &key,
                const std::string &file, const std::string &path,
                bool allowZero) {
  double d = number(obj, key, file, path);
  if (allowZero ? d < 0 : d <= 0)
    fail(file, join(path, key),
         std::string("must be ") + (allowZero ? ">= 0" : "> 0") + ", not " +
             field(obj, key, file, path).dump());
  return d;
}

long integer(const json &obj, const std::string &key, const std::string &file,
             const std::string &path, long minimum) {
  const json &v = field(obj, key, file, path);
  if (!v.is_number_integer())
    fail(file, join(path, key), "must be an integer, not " + v.dump());
  long n = v.get<long>();
  if (n < minimum)
    fail(file, join(path, key),
         "must be >= " + std::to_string(minimum) + ", not " + v.dump());
  return n;
}

std::string string(const json &obj, const std::string &key,
                   const std::string &file, const std::string &path) {
  const json &v = field(obj, key, file, path);
  if (!v.is_string() || v.get<std::string>().empty())
    fail(file, join(path, key), "must be a non-empty string, not " + v.dump());
  return v.get<std::string>();
}

std::string stringOr(const json &obj, const std::string &key,
                     const std::string &fallback, const std::string &file,
                     const std::string &path) {
  if (!obj.is_object() || !obj.contains(key))
    return fallback;
  return string(obj, key, file, path);
}

bool boolOr(const json &obj, const std::string &key, bool fallback,
            const std::string &file, const std::string &path) {
  if (!obj.is_object() || !obj.contains(key))
    return fallback;
  const json &v = obj[key];
  if (!v.is_boolean())
    fail(file, join(path, key), "must be true or false, not " + v.dump());
  return v.get<bool>();
}

const json &array(const json &obj, const std::string &key,
                  const std::string &file, const std::string &path,
                  bool nonEmpty) {
  const json &v = field(obj, key, file, path);
  if (!v.is_array())
    fail(file, join(path, key), "must be a list");
  if (nonEmpty && v.empty())
    fail(file, join(path, key), "must not be empty");
  return v;
}

} // namespace het::plan::json_util
