//===- Error.cpp ----------------------------------------------------------===//
#include "het/Plan/Error.h"

namespace het::plan {

void fail(const std::string &file, const std::string &field,
          const std::string &problem) {
  std::string message = file;
  if (!field.empty())
    message += ": " + field;
  throw PlanError(message + ": " + problem);
}

} // namespace het::plan
