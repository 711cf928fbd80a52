#include "BoardTests.h"

#include "Harness.h"

#include <cmath>
#include <random>
#include <signal.h>
#include <unistd.h>

namespace hetccltest {

std::vector<float> orderSensitiveInput(int r, int k, size_t count) {
  std::mt19937 g(uint32_t(1000 * k + r));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = u(g) * std::pow(10.0f, float(int(g() % 7) - 3));
  return v;
}

std::vector<float> rankOrderSum(int n, int k, size_t count) {
  std::vector<float> sum = orderSensitiveInput(0, k, count);
  for (int q = 1; q < n; ++q) {
    std::vector<float> x = orderSensitiveInput(q, k, count);
    for (size_t i = 0; i < count; ++i) sum[i] += x[i];
  }
  return sum;
}

int peerKilledBetweenCalls(int rank, int n, const hetcclUniqueId& id, size_t count) {
  hetcclComm_t comm = initRank(rank, n, id, 20000);
  RCHECK(comm, "init");
  std::vector<float> x(count, 1.0f);
  RCALL(hetcclAllReduce(x.data(), x.data(), count, hetcclFloat32, hetcclSum, comm));
  if (rank == 2) kill(getpid(), SIGKILL);
  double t0 = nowSec();
  hetcclResult_t res = hetcclAllReduce(x.data(), x.data(), count, hetcclFloat32, hetcclSum, comm);
  double waited = nowSec() - t0;
  RCHECK(res == hetcclSystemError || res == hetcclRemoteError, "got %s: %s", hetcclGetErrorString(res),
         hetcclGetLastError(comm));
  RCHECK(waited < 5.0, "the error took %.1f s (timeout 20 s)", waited);
  hetcclCommDestroy(comm);
  return 0;
}

} // namespace hetccltest
