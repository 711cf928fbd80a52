//===- RangeMax.h - the largest of a per-layer figure over a range -*- C++ -*-===//
//
// The planner asks for the largest of a layer figure (a working set, a
// tensor) over a stage's layer range at every range it tries: a sparse
// table answers each in O(1) after O(L log L) set-up, where a scan of the
// range made memory the planner's hottest function.
//
//===----------------------------------------------------------------------===//

#ifndef HET_PLAN_RANGEMAX_H
#define HET_PLAN_RANGEMAX_H

#include <algorithm>
#include <vector>

namespace het::plan {

class RangeMax {
public:
  RangeMax() = default;
  explicit RangeMax(const std::vector<double> &values) {
    levels_.push_back(values);
    for (size_t width = 2; width <= values.size(); width *= 2) {
      const std::vector<double> &half = levels_.back();
      std::vector<double> next(values.size() - width + 1);
      for (size_t i = 0; i < next.size(); ++i)
        next[i] = std::max(half[i], half[i + width / 2]);
      levels_.push_back(std::move(next));
    }
  }
  /// The largest value of [b, e) (clipped to the values), 0 if empty.
  double of(int b, int e) const {
    if (levels_.empty())
      return 0;
    b = std::max(b, 0);
    e = std::min<int>(e, int(levels_.front().size()));
    if (e <= b)
      return 0;
    size_t level = 0;
    while ((size_t(2) << level) <= size_t(e - b))
      ++level;
    const std::vector<double> &row = levels_[level];
    return std::max(row[size_t(b)], row[size_t(e) - (size_t(1) << level)]);
  }

private:
  std::vector<std::vector<double>> levels_; // level k: max of 2^k values from i
};

} // namespace het::plan

#endif
