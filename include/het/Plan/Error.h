//===- Error.h - the planner's input errors ---------------------*- C++ -*-===//
//
// Every bad input the planner meets (cluster spec, catalog, model, profile,
// plan) is reported as one PlanError whose message names the file, the field
// and the problem, so the CLI can print it and exit non-zero.
//
//===----------------------------------------------------------------------===//
#ifndef HET_PLAN_ERROR_H
#define HET_PLAN_ERROR_H

#include <stdexcept>
#include <string>

namespace het::plan {

class PlanError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Throws PlanError("<file>: <field>: <problem>").
[[noreturn]] void fail(const std::string &file, const std::string &field,
                       const std::string &problem);

} // namespace het::plan

#endif
