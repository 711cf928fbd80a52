#include "Algorithms/Algorithms.h"

#include "Common/Error.h"

namespace hetccl {

Members allMembers(const hetcclComm* c) {
  Members m;
  m.ranks.resize(c->nranks);
  for (int r = 0; r < c->nranks; ++r) m.ranks[r] = r;
  m.me = c->rank;
  return m;
}

Members membersOf(const hetcclComm* c, const std::vector<int>& ranks) {
  Members m;
  m.ranks = ranks;
  m.me = -1;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] == c->rank) m.me = int(i);
  if (m.me < 0) fail(hetcclInternalError, "rank is not a member of its own group");
  return m;
}

Elem elemOf(hetcclDataType_t dt, hetcclRedOp_t op) { return Elem{dt, op, dtypeSize(dt), reduceFn(dt, op)}; }

} // namespace hetccl
