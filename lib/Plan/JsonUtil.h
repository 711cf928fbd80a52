//===- JsonUtil.h - typed field access that names the field on error -----===//
//
// Private to lib/Plan: every loader reads JSON through these, so a missing
// or mistyped field always reports "<file>: <path>: <problem>".
//
//===----------------------------------------------------------------------===//
#ifndef HET_LIB_PLAN_JSONUTIL_H
#define HET_LIB_PLAN_JSONUTIL_H

#include "het/Plan/Error.h"

#include <nlohmann/json.hpp>
#include <string>

namespace het::plan::json_util {

using nlohmann::json;

/// Parses a file; I/O and syntax errors name the file (and the byte).
json readFile(const std::string &path);

const json &field(const json &obj, const std::string &key,
                  const std::string &file, const std::string &path);
double number(const json &obj, const std::string &key, const std::string &file,
              const std::string &path);
double numberOr(const json &obj, const std::string &key, double fallback,
                const std::string &file, const std::string &path);
/// A number > 0 (or >= 0 when `allowZero`).
double positive(const json &obj, const std::string &key,
                const std::string &file, const std::string &path,
                bool allowZero = false);
long integer(const json &obj, const std::string &key, const std::string &file,
             const std::string &path, long minimum);
/// Optional fields: `fallback` when absent, an error when of the wrong type.
std::string stringOr(const json &obj, const std::string &key,
                     const std::string &fallback, const std::string &file,
                     const std::string &path);
bool boolOr(const json &obj, const std::string &key, bool fallback,
            const std::string &file, const std::string &path);
std::string string(const json &obj, const std::string &key,
                   const std::string &file, const std::string &path);
const json &array(const json &obj, const std::string &key,
                  const std::string &file, const std::string &path,
                  bool nonEmpty = true);
std::string join(const std::string &path, const std::string &key);
std::string join(const std::string &path, size_t index);

} // namespace het::plan::json_util

#endif
