// One rank of the Gloo baseline: gloo::AllreduceRing<float> over Gloo's TCP
// transport on loopback, rendezvous through a FileStore directory.
//   hetccl-compare-gloo RANK SIZE STORE_DIR
#include "Sizes.h"

#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: hetccl-compare-gloo RANK SIZE STORE_DIR\n");
    return 2;
  }
  int rank = atoi(argv[1]), n = atoi(argv[2]);
  gloo::transport::tcp::attr attr("127.0.0.1");
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(argv[3]);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
  ctx->connectFullMesh(store, dev);
  for (size_t bytes : cclbench::sizes()) {
    size_t count = bytes / 4;
    std::vector<float> a(count);
    gloo::AllreduceRing<float> ar(ctx, {a.data()}, int(count));
    int iters = cclbench::itersFor(bytes);
    for (int i = 0; i < iters / 10 + 1; ++i) ar.run();
    gloo::BarrierAllToOne barrier(ctx);
    barrier.run();
    std::fill(a.begin(), a.end(), 1.0f);
    double t0 = cclbench::now();
    for (int i = 0; i < iters; ++i) ar.run();
    double t = (cclbench::now() - t0) / iters;
    gloo::AllreduceRing<double> mx(ctx, {&t}, 1, gloo::ReductionFunction<double>::max);
    mx.run();
    (void)n;
    if (rank == 0) cclbench::report(stdout, bytes, t);
  }
  return 0;
}
