/* hetccl: the hybrid collective library of het.
 *
 * One communicator spans ranks of different kinds (CPU, CUDA, HIP, ...) on
 * one or many hosts. The API follows NCCL's shape so that code written for
 * NCCL ports by renaming: get a unique id on one rank, pass it to the others
 * by any means, then every rank calls hetcclCommInitRank.
 *
 * All calls are blocking for host buffers and return when the result is in
 * the receive buffer (there is no stream argument: the library is host
 * driven). Every blocking call ends after the communicator's timeout at the
 * latest; hetcclCommAbort from another thread ends it at once.
 *
 * The header is plain C so that C, C++, Python ctypes and generated code can
 * all use it.
 */
#ifndef HET_C_HETCCL_H
#define HET_C_HETCCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HETCCL_MAJOR 0
#define HETCCL_MINOR 1

typedef enum {
  hetcclSuccess = 0,
  hetcclUnhandledCudaError = 1, /* a device runtime call failed */
  hetcclSystemError = 2,        /* a socket, shm or OS call failed; a peer died */
  hetcclInternalError = 3,
  hetcclInvalidArgument = 4,
  hetcclInvalidUsage = 5,
  hetcclRemoteError = 6,        /* a peer reported an error or sent bad data */
  hetcclInProgress = 7,
  hetcclTimeout = 8,            /* a blocking call ran past the timeout */
  hetcclAborted = 9,            /* hetcclCommAbort was called */
  hetcclAuthError = 10,         /* a peer failed the job-token challenge */
  hetcclUnavailable = 11,       /* a vendor library or device runtime is missing */
  hetcclNumResults = 12
} hetcclResult_t;

typedef enum {
  hetcclFloat32 = 0,
  hetcclFloat64 = 1,
  hetcclFloat16 = 2,
  hetcclBfloat16 = 3,
  hetcclInt8 = 4,
  hetcclUint8 = 5,
  hetcclInt32 = 6,
  hetcclInt64 = 7,
  hetcclNumTypes = 8
} hetcclDataType_t;

typedef enum {
  hetcclSum = 0,
  hetcclProd = 1,
  hetcclMin = 2,
  hetcclMax = 3,
  hetcclAvg = 4,
  hetcclNumOps = 5
} hetcclRedOp_t;

typedef enum {
  hetcclAlgoAuto = 0,
  hetcclAlgoRing = 1,
  hetcclAlgoTree = 2,
  hetcclAlgoHalvingDoubling = 3,
  hetcclAlgoHierarchical = 4,
  hetcclAlgoParameterServer = 5,
  /* All-reduce only: every rank reduces all inputs from the peers' shm
   * boards (every rank on one host, the message within HETCCL_ONESHOT_BYTES);
   * where that does not hold, and for other collectives, what auto picks. */
  hetcclAlgoOneShot = 6,
  /* All-reduce only: reduce-scatter and all-gather through the peers' shm
   * boards in board-sized chunks (every rank on one host, any size); where
   * that does not hold, and for other collectives, what auto picks. */
  hetcclAlgoTwoShot = 7,
  hetcclNumAlgos = 8
} hetcclAlgo_t;

typedef enum {
  hetcclCompressNone = 0,
  hetcclCompressFp16 = 1,
  hetcclCompressBf16 = 2,
  hetcclCompressInt8 = 3,  /* int8 with one float scale per chunk */
  hetcclCompressTopK = 4,  /* top-k sparsification with error feedback */
  hetcclNumCompressions = 5
} hetcclCompression_t;

typedef enum {
  hetcclDeviceCpu = 0,
  hetcclDeviceCuda = 1,
  hetcclDeviceHip = 2,
  hetcclDeviceNpu = 3, /* staged through host memory; no vendor library yet */
  hetcclNumDeviceKinds = 4
} hetcclDeviceKind_t;

#define HETCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[HETCCL_UNIQUE_ID_BYTES];
} hetcclUniqueId;

typedef struct hetcclComm* hetcclComm_t;

/* Per-rank configuration. Initialise with HETCCL_CONFIG_INITIALIZER or
 * hetcclConfigInit, then set what differs. Empty strings / zero mean "take
 * the environment variable, else the default" (see docs/hetccl.md). */
typedef struct {
  size_t size;                   /* sizeof(hetcclConfig_t), for ABI checks */
  hetcclDeviceKind_t deviceKind; /* what kind of memory this rank's buffers are */
  int deviceIndex;               /* which device of that kind (-1: current) */
  char host[64];                 /* host identity; "" = HETCCL_HOST or hostname */
  char bindAddr[64];             /* IPv4 address for data sockets; "" = HETCCL_BIND_ADDR or 127.0.0.1 */
  int64_t timeoutMs;             /* per blocking call; 0 = HETCCL_TIMEOUT_MS or 300000 */
  hetcclAlgo_t algo;             /* default algorithm; auto = HETCCL_ALGO or cost table */
  hetcclCompression_t compression; /* default for AllReduce; none = HETCCL_COMPRESSION */
  double topkRatio;              /* fraction kept by top-k; 0 = HETCCL_TOPK_RATIO or 0.01 */
} hetcclConfig_t;

#define HETCCL_CONFIG_INITIALIZER \
  { sizeof(hetcclConfig_t), hetcclDeviceCpu, -1, "", "", 0, hetcclAlgoAuto, hetcclCompressNone, 0.0 }

void hetcclConfigInit(hetcclConfig_t* config);

const char* hetcclGetErrorString(hetcclResult_t result);
/* The last error message of the calling thread, with the detail the result
 * code cannot carry (which peer, which argument). Never NULL. */
const char* hetcclGetLastError(hetcclComm_t comm);
hetcclResult_t hetcclGetVersion(int* version);
/* How many devices of `kind` this process can use: 0 when the vendor
 * runtime is installed but reports no device (or no driver); the CPU kind
 * counts 1. hetcclUnavailable, naming the library, when the runtime cannot
 * be opened. For cuda and hip it initializes the vendor runtime in this
 * process, which a fork() child cannot use: ask in the process that will
 * use the device, not in a parent before it forks the ranks. */
hetcclResult_t hetcclDeviceCount(hetcclDeviceKind_t kind, int* count);

/* Makes a new id: a fresh random job token and the root address. The root is
 * HETCCL_ROOT=host:port if set, else MASTER_ADDR/MASTER_PORT, else loopback
 * with a free port. Rank 0 must run on the root's host. */
hetcclResult_t hetcclGetUniqueId(hetcclUniqueId* uniqueId);
/* A fresh id (random token and job id) whose root is `root` = "host:port",
 * the environment not consulted; port 0 means a port of that host's address
 * that the kernel says is free now. For launchers that ship the id through
 * their own channel (the torch.distributed backend uses its c10d store) and
 * whose MASTER_PORT is already taken by that channel. */
hetcclResult_t hetcclGetUniqueIdAt(hetcclUniqueId* uniqueId, const char* root);
/* Builds the id every rank of a job computes alike from the environment:
 * HETCCL_ROOT (or MASTER_ADDR + MASTER_PORT) and the shared secret
 * HETCCL_TOKEN. Fails with a clear message if either is missing. */
hetcclResult_t hetcclUniqueIdFromEnv(hetcclUniqueId* uniqueId);

hetcclResult_t hetcclCommInitRank(hetcclComm_t* comm, int nranks, hetcclUniqueId commId, int rank,
                                  const hetcclConfig_t* config);
/* torchrun convention: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (or
 * HETCCL_ROOT), HETCCL_TOKEN. */
hetcclResult_t hetcclCommInitFromEnv(hetcclComm_t* comm, const hetcclConfig_t* config);

#define HETCCL_SPLIT_NOCOLOR (-1)
/* Collective over `comm` (every rank of it calls, NOCOLOR ranks too): ranks
 * with the same `color` (>= 0) form a new communicator, ordered by `key`
 * (ties by parent rank). color = HETCCL_SPLIT_NOCOLOR (-1) gets
 * *newcomm = NULL. `config` may be NULL (inherit the parent's current device
 * kind and index, host, data address, timeout, algorithm and compression).
 * Each new communicator has its own job token and job id; its root listens on
 * a free port of its rank 0's data address (never HETCCL_ROOT/MASTER_ADDR),
 * and its id travels only to its members over the parent's authenticated
 * links. The parent stays usable, and may be split again; the new
 * communicators are independent of it (destroy each on its own). An invalid
 * color or config on any rank fails the call with hetcclInvalidArgument on
 * every rank and leaves the parent usable; a failure during the exchange (a
 * dead member, the timeout, hetcclCommAbort of the parent) is sticky on the
 * parent, as for a collective. Not allowed inside GroupStart/GroupEnd. */
hetcclResult_t hetcclCommSplit(hetcclComm_t comm, int color, int key, hetcclComm_t* newcomm,
                               const hetcclConfig_t* config);
hetcclResult_t hetcclCommDestroy(hetcclComm_t comm);
/* Safe to call from another thread while a call blocks in comm: that call
 * returns hetcclAborted. Frees the communicator once no call is inside. */
hetcclResult_t hetcclCommAbort(hetcclComm_t comm);
/* hetcclCommAbort without the free, for owners whose own threads may still
 * call into the communicator afterwards (the torch.distributed backend):
 * calls blocked in it return hetcclAborted within milliseconds, later calls
 * fail at once with hetcclAborted, and the peers' calls fail on the poisoned
 * links. Returns once no call is inside. Free it with hetcclCommDestroy. */
hetcclResult_t hetcclCommRevoke(hetcclComm_t comm);
/* The sticky error of the communicator (hetcclSuccess if none). After an
 * error the communicator refuses further collectives; abort or destroy it. */
hetcclResult_t hetcclCommGetAsyncError(hetcclComm_t comm, hetcclResult_t* asyncError);
hetcclResult_t hetcclCommCount(const hetcclComm_t comm, int* count);
hetcclResult_t hetcclCommUserRank(const hetcclComm_t comm, int* rank);

/* Per-communicator overrides (they win over config and environment). */
hetcclResult_t hetcclCommSetAlgorithm(hetcclComm_t comm, hetcclAlgo_t algo);
hetcclResult_t hetcclCommSetCompression(hetcclComm_t comm, hetcclCompression_t compression, double topkRatio);
hetcclResult_t hetcclCommSetTimeout(hetcclComm_t comm, int64_t timeoutMs);
/* Forgets the top-k error-feedback residual kept for buffer `buff`. */
hetcclResult_t hetcclCommResetErrorFeedback(hetcclComm_t comm, const void* buff);

/* Bytes this rank has written into transports (shm rings and sockets),
 * headers included, since init. Used to check compression ratios. */
hetcclResult_t hetcclCommGetBytesSent(hetcclComm_t comm, uint64_t* bytes);
/* The algorithm an AllReduce of `bytes` runs on this comm: the set one, or
 * what `auto` picks -- from the tuning database (HETCCL_TUNING_DB, written
 * by het-tune collectives) where it has a record for this communicator's
 * shape and host, else one-shot below its crossover, else the cost table. */
hetcclResult_t hetcclCommPickAlgorithm(hetcclComm_t comm, size_t bytes, hetcclAlgo_t* algo);

/* This communicator's all-reduce key in the tuning database, up to the
 * size: "allreduce ranks=R nodes=N link=shm|tcp|mixed bytes=" (NUL-terminated;
 * hetcclInvalidArgument if `capacity` is too small). docs/tuning.md. */
hetcclResult_t hetcclCommTuningKey(hetcclComm_t comm, char* key, size_t capacity);

const char* hetcclAlgoName(hetcclAlgo_t algo);
/* Parses "ring", "tree", "halving_doubling", "hierarchical", "ps", "oneshot", "twoshot", "auto". */
hetcclResult_t hetcclAlgoFromName(const char* name, hetcclAlgo_t* algo);

/* Collectives. Counts are in elements; in-place when sendbuff == recvbuff
 * (AllGather: sendbuff == recvbuff + rank*sendcount; ReduceScatter:
 * recvbuff == sendbuff + rank*recvcount). The stream argument of NCCL is
 * absent: calls are synchronous. */
hetcclResult_t hetcclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               hetcclDataType_t datatype, hetcclRedOp_t op, hetcclComm_t comm);
hetcclResult_t hetcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                               hetcclDataType_t datatype, hetcclComm_t comm);
hetcclResult_t hetcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   hetcclDataType_t datatype, hetcclRedOp_t op, hetcclComm_t comm);
/* Uneven blocks, as MPI_Allgatherv and MPI_Reduce_scatter: rank r's block
 * is recvcounts[r] elements (any may be 0) at the sum of the counts before
 * it; recvcounts has one entry per rank and is the same on every rank.
 * AllGatherV sends recvcounts[rank] elements and receives them all;
 * ReduceScatterV reduces the sum of the counts and keeps this rank's block.
 * Both run the ring whatever the communicator's algorithm. */
hetcclResult_t hetcclAllGatherV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                hetcclDataType_t datatype, hetcclComm_t comm);
hetcclResult_t hetcclReduceScatterV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                    hetcclDataType_t datatype, hetcclRedOp_t op, hetcclComm_t comm);
hetcclResult_t hetcclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                               hetcclDataType_t datatype, int root, hetcclComm_t comm);
hetcclResult_t hetcclReduce(const void* sendbuff, void* recvbuff, size_t count,
                            hetcclDataType_t datatype, hetcclRedOp_t op, int root, hetcclComm_t comm);
/* Sends `count` elements to every rank (sendbuff holds nranks blocks). */
hetcclResult_t hetcclAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                              hetcclDataType_t datatype, hetcclComm_t comm);
/* Uneven blocks, as MPI_Alltoallv: sendcounts[r] elements at sdispls[r]
 * (in elements) of sendbuff go to rank r, which receives them as
 * recvcounts[me] elements at rdispls[me] of its recvbuff. Each array has
 * one entry per rank; any count may be 0. A count that the two sides of
 * a pair disagree on fails the call on the receiving rank
 * (hetcclInvalidUsage, naming the bytes; every pair exchanges a frame,
 * empty ones too, so this is never a wait), and sendcounts[rank] !=
 * recvcounts[rank] fails it at once (hetcclInvalidArgument).
 * Pairwise over the communicator's transports (shared memory on a host,
 * TCP across); the buffers may not overlap. */
hetcclResult_t hetcclAllToAllV(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls,
                               void* recvbuff, const size_t* recvcounts, const size_t* rdispls,
                               hetcclDataType_t datatype, hetcclComm_t comm);
hetcclResult_t hetcclSend(const void* sendbuff, size_t count, hetcclDataType_t datatype, int peer,
                          hetcclComm_t comm);
hetcclResult_t hetcclRecv(void* recvbuff, size_t count, hetcclDataType_t datatype, int peer,
                          hetcclComm_t comm);
hetcclResult_t hetcclBarrier(hetcclComm_t comm);

/* Calls between GroupStart and GroupEnd are queued and run at GroupEnd;
 * Send/Recv pairs inside one group progress together, so any pattern of
 * point-to-point exchanges completes without deadlock. Groups nest. */
hetcclResult_t hetcclGroupStart(void);
hetcclResult_t hetcclGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif /* HET_C_HETCCL_H */
