// One rank of the OpenMPI baseline: MPI_Allreduce (MPI_FLOAT, MPI_SUM) on
// the same sizes. Launched by hetccl-compare through mpirun with the shared
// memory transport (--mca btl self,vader).
#include "Sizes.h"

#include <mpi.h>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
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
  MPI_Finalize();
  return 0;
}
