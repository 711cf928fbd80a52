/* A program of another project that uses hetccl: every rank all-reduces a
 * buffer and checks the sum. It is built against an installed het, either
 * with CMake (CMakeLists.txt here: find_package(hetccl)) or with pkg-config:
 *
 *   cc allreduce.c $(pkg-config --cflags --libs hetccl) -o allreduce
 *
 * and started as a job of N ranks by any launcher that sets torchrun's
 * environment (RANK, WORLD_SIZE, MASTER_ADDR/MASTER_PORT or HETCCL_ROOT,
 * HETCCL_TOKEN), for example het-run:
 *
 *   het-run -n 2 ./allreduce 1000003
 */
#include <het-c/hetccl.h>

#include <stdio.h>
#include <stdlib.h>

static int check(hetcclResult_t result, hetcclComm_t comm, const char *call) {
  if (result == hetcclSuccess)
    return 0;
  fprintf(stderr, "allreduce: %s failed: %s: %s\n", call, hetcclGetErrorString(result),
          hetcclGetLastError(comm));
  return 1;
}

int main(int argc, char **argv) {
  /* An odd element count by default: no rank's share divides evenly. */
  size_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000003;
  hetcclConfig_t config = HETCCL_CONFIG_INITIALIZER;
  hetcclComm_t comm = NULL;
  if (check(hetcclCommInitFromEnv(&comm, &config), NULL, "hetcclCommInitFromEnv"))
    return 1;
  int rank = 0, nranks = 0, version = 0;
  hetcclCommUserRank(comm, &rank);
  hetcclCommCount(comm, &nranks);
  hetcclGetVersion(&version);

  /* Rank r contributes r + 1 + i % 7 at element i: exact in float, and every
   * element's sum is known. */
  float *buffer = malloc(count * sizeof(float));
  if (!buffer) {
    fprintf(stderr, "allreduce: out of memory for %zu floats\n", count);
    return 1;
  }
  for (size_t i = 0; i < count; ++i)
    buffer[i] = (float)(rank + 1 + (int)(i % 7));
  if (check(hetcclAllReduce(buffer, buffer, count, hetcclFloat32, hetcclSum, comm), comm,
            "hetcclAllReduce"))
    return 1;
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float expected = (float)(nranks * (nranks + 1) / 2 + nranks * (int)(i % 7));
    if (buffer[i] != expected && wrong++ == 0)
      fprintf(stderr, "allreduce: rank %d element %zu is %g, expected %g\n", rank, i,
              buffer[i], expected);
  }
  printf("rank %d of %d: all-reduce of %zu floats %s (hetccl version %d)\n", rank, nranks, count,
         wrong ? "WRONG" : "correct", version);
  free(buffer);
  hetcclCommDestroy(comm);
  return wrong ? 1 : 0;
}
