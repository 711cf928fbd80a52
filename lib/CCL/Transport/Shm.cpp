#include "Transport/Shm.h"

#include "Common/Error.h"
#include "Transport/ShmBoard.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <climits>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hetccl {

constexpr uint64_t kSegMagic = 0x48455443434c5348ull; // "HETCCLSH"
constexpr size_t kHeaderBytes = 4096;
constexpr size_t kCtlBytes = 256; // head and tail on separate cache lines

struct ShmLink::Ring {
  alignas(128) std::atomic<uint64_t> head; // bytes written, owned by the sender
  alignas(128) std::atomic<uint64_t> tail; // bytes consumed, owned by the receiver
};
static_assert(sizeof(ShmLink::Ring) <= kCtlBytes, "ring control block too large");

static size_t ringsEnd(uint32_t nslots, uint64_t ringBytes) {
  return kHeaderBytes + size_t(nslots) * (kCtlBytes + ringBytes);
}

static size_t segBytes(uint32_t nslots, uint64_t ringBytes, uint64_t boardBytes) {
  return ringsEnd(nslots, ringBytes) + boardSize(boardBytes);
}

std::unique_ptr<ShmSegment> ShmSegment::create(const std::string& name, int ownerRank, uint32_t nslots,
                                               uint64_t ringBytes, uint64_t boardBytes, uint64_t oneShotLimit) {
  std::unique_ptr<ShmSegment> s(new ShmSegment);
  s->name_ = name;
  s->size_ = segBytes(nslots, ringBytes, boardBytes);
  // 0600: only processes of the same user can map the rings.
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) failErrno("shm_open(create) " + name);
  s->owner_ = true;
  if (ftruncate(fd, off_t(s->size_)) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(name.c_str());
    errno = e;
    failErrno("ftruncate shm " + name + " to " + std::to_string(s->size_) + " bytes");
  }
  s->base_ = mmap(nullptr, s->size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (s->base_ == MAP_FAILED) {
    s->base_ = nullptr;
    shm_unlink(name.c_str());
    failErrno("mmap shm " + name);
  }
  ShmSegHeader* h = s->header();
  new (&h->errorRank) std::atomic<int32_t>(0);
  new (&h->doorbell) std::atomic<uint32_t>(0);
  new (&h->sleepers) std::atomic<uint32_t>(0);
  h->ownerRank = ownerRank;
  h->nslots = nslots;
  h->ringBytes = ringBytes;
  h->boardBytes = boardBytes;
  h->oneShotLimit = oneShotLimit;
  for (uint32_t i = 0; i < nslots; ++i) new (s->slot(i)) ShmLink::Ring{{0}, {0}};
  if (boardBytes) initBoard(s->board());
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kSegMagic;
  return s;
}

std::unique_ptr<ShmSegment> ShmSegment::open(const std::string& name, uint32_t nslots, uint64_t ringBytes,
                                             uint64_t boardBytes, uint64_t oneShotLimit) {
  std::unique_ptr<ShmSegment> s(new ShmSegment);
  s->name_ = name;
  s->size_ = segBytes(nslots, ringBytes, boardBytes);
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) failErrno("shm_open " + name);
  struct stat st;
  if (fstat(fd, &st) != 0 || size_t(st.st_size) != s->size_) {
    close(fd);
    fail(hetcclRemoteError,
         "shm segment " + name + " has the wrong size (mismatched HETCCL_SHM_BYTES or HETCCL_BOARD_BYTES?)");
  }
  s->base_ = mmap(nullptr, s->size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (s->base_ == MAP_FAILED) {
    s->base_ = nullptr;
    failErrno("mmap shm " + name);
  }
  if (s->header()->magic != kSegMagic || s->header()->nslots != nslots || s->header()->ringBytes != ringBytes ||
      s->header()->boardBytes != boardBytes)
    fail(hetcclRemoteError, "shm segment " + name + " is not a hetccl segment of this job");
  if (s->header()->oneShotLimit != oneShotLimit)
    fail(hetcclInvalidArgument, "rank " + std::to_string(s->header()->ownerRank) + " runs all-reduces one-shot up to " +
                                    std::to_string(s->header()->oneShotLimit) + " bytes, this rank up to " +
                                    std::to_string(oneShotLimit) + " (mismatched HETCCL_ONESHOT_BYTES?)");
  return s;
}

ShmSegment::~ShmSegment() {
  if (base_) munmap(base_, size_);
  if (owner_) unlink();
}

void ShmSegment::unlink() {
  if (owner_) shm_unlink(name_.c_str());
  owner_ = false;
}

char* ShmSegment::board() const {
  return static_cast<char*>(base_) + ringsEnd(header()->nslots, header()->ringBytes);
}

char* ShmSegment::slot(uint32_t i) const {
  return static_cast<char*>(base_) + kHeaderBytes + size_t(i) * (kCtlBytes + header()->ringBytes);
}

ShmLink::ShmLink(int peer, int peerPid, ShmSegment* mine, uint32_t inSlot, ShmSegment* theirs, uint32_t outSlot,
                 uint64_t ringBytes, int myRank)
    : peer_(peer), peerPid_(peerPid), myRank_(myRank), mine_(mine), theirs_(theirs), cap_(ringBytes) {
  in_ = reinterpret_cast<Ring*>(mine->slot(inSlot));
  out_ = reinterpret_cast<Ring*>(theirs->slot(outSlot));
  inData_ = mine->slot(inSlot) + kCtlBytes;
  outData_ = theirs->slot(outSlot) + kCtlBytes;
}

size_t ShmLink::trySend(const void* p, size_t n) {
  uint64_t head = out_->head.load(std::memory_order_relaxed);
  uint64_t tail = out_->tail.load(std::memory_order_acquire);
  uint64_t space = cap_ - (head - tail);
  if (space == 0 || n == 0) return 0;
  size_t take = n < space ? n : size_t(space);
  size_t off = size_t(head % cap_);
  size_t first = take < cap_ - off ? take : size_t(cap_ - off);
  memcpy(outData_ + off, p, first);
  if (take > first) memcpy(outData_, static_cast<const char*>(p) + first, take - first);
  out_->head.store(head + take, std::memory_order_seq_cst);
  bytesSent += take;
  ring();
  return take;
}

// Wakes the peer if it sleeps: it may wait for the data we just wrote or
// the space we just freed.
void ShmLink::ring() {
  ShmSegHeader* h = theirs_->header();
  h->doorbell.fetch_add(1, std::memory_order_seq_cst);
  if (h->sleepers.load(std::memory_order_seq_cst) > 0)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h->doorbell), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

std::atomic<uint32_t>* ShmLink::doorbell() { return &mine_->header()->doorbell; }

void doorbellWait(std::atomic<uint32_t>* bell, uint32_t seen, int64_t timeoutUs) {
  timespec ts{time_t(timeoutUs / 1000000), long(timeoutUs % 1000000) * 1000};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(bell), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

const char* ShmLink::peek(size_t* avail) {
  uint64_t tail = in_->tail.load(std::memory_order_relaxed);
  uint64_t head = in_->head.load(std::memory_order_acquire);
  uint64_t n = head - tail;
  size_t off = size_t(tail % cap_);
  if (n > cap_ - off) n = cap_ - off;
  *avail = size_t(n);
  return inData_ + off;
}

void ShmLink::release(size_t n) {
  in_->tail.store(in_->tail.load(std::memory_order_relaxed) + n, std::memory_order_seq_cst);
  ring();
}

size_t ShmLink::tryRecv(void* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    size_t avail;
    const char* src = peek(&avail);
    if (avail == 0) break;
    size_t take = avail < n - done ? avail : n - done;
    memcpy(static_cast<char*>(p) + done, src, take);
    release(take);
    done += take;
  }
  return done;
}

bool processGone(int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = fopen(path, "r");
  if (!f) return true;
  char buf[512];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  // Format: pid (comm) state ...; comm may hold spaces, so find the last ')'.
  const char* close = strrchr(buf, ')');
  if (!close || close[1] != ' ') return false;
  char state = close[2];
  return state == 'Z' || state == 'X';
}

void ShmLink::checkPeer() {
  int32_t e = mine_->header()->errorRank.load(std::memory_order_acquire);
  if (e > 0) fail(hetcclRemoteError, "rank " + std::to_string(e - 1) + " on this host reported an error");
  if (processGone(peerPid_))
    fail(hetcclSystemError, "peer rank " + std::to_string(peer_) + " (pid " + std::to_string(peerPid_) +
                                ") has exited");
}

void ShmLink::poison() {
  int32_t zero = 0;
  theirs_->header()->errorRank.compare_exchange_strong(zero, myRank_ + 1);
  ring();
}

} // namespace hetccl
