// One rank of the OpenMPI baseline: MPI_Allreduce (MPI_FLOAT, MPI_SUM), or
// with the argument "alltoallv" MPI_Alltoallv of cclbench::alltoallvCount's
// uneven blocks, on the same sizes. Launched by hetccl-compare through
// mpirun with the shared memory transport (--mca btl self,vader).
#include "Sizes.h"

#include <cstring>
#include <mpi.h>
#include <vector>

namespace {

void allReduce(int rank, int n) {
  for (size_t bytes : cclbench::sizes()) {
    size_t count = bytes / 4;
    std::vector<float> a(count, 1.0f), b(count);
    int iters = cclbench::itersFor(bytes);
    for (int i = 0; i < iters / 10 + 1; ++i) MPI_Allreduce(a.data(), b.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = cclbench::now();
    for (int i = 0; i < iters; ++i) MPI_Allreduce(a.data(), b.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = (cclbench::now() - t0) / iters, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (b[0] != float(n)) {
      fprintf(stderr, "MPI_Allreduce gave a wrong value\n");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) cclbench::report(stdout, bytes, tmax);
  }
}

void allToAllV(int rank, int n) {
  for (size_t bytes : cclbench::sizes()) {
    cclbench::AllToAllVBlocks<int> k(bytes, rank, n);
    std::vector<int> &sc = k.sendCounts, &so = k.sendOffsets, &rc = k.recvCounts, &ro = k.recvOffsets;
    std::vector<float> a(k.sent + 1, float(rank)), b(k.received + 1);
    int iters = cclbench::itersFor(bytes);
    for (int i = 0; i < iters / 10 + 1; ++i)
      MPI_Alltoallv(a.data(), sc.data(), so.data(), MPI_FLOAT, b.data(), rc.data(), ro.data(), MPI_FLOAT, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = cclbench::now();
    for (int i = 0; i < iters; ++i)
      MPI_Alltoallv(a.data(), sc.data(), so.data(), MPI_FLOAT, b.data(), rc.data(), ro.data(), MPI_FLOAT, MPI_COMM_WORLD);
    double t = (cclbench::now() - t0) / iters, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int last = n - 1;
    if (rc[last] > 0 && b[ro[last]] != float(last)) {
      fprintf(stderr, "MPI_Alltoallv gave a wrong value\n");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) cclbench::report(stdout, bytes, tmax);
  }
}

} // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc > 1 && strcmp(argv[1], "alltoallv") == 0)
    allToAllV(rank, n);
  else
    allReduce(rank, n);
  MPI_Finalize();
  return 0;
}
