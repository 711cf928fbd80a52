// Shared-memory transport between processes on one host. Each rank creates
// one POSIX shm segment holding one single-producer/single-consumer ring per
// local peer (its inbound rings); a sender writes into its slot of the
// receiver's segment. The head/tail counters are the only shared state, so
// a byte is copied once in and once out, and a reduction can read straight
// from the ring.
//
// After the rings, a segment holds the owner's board (ShmBoard.h): where
// the one-shot and two-shot all-reduces publish this rank's input for the
// peers to read in place.
//
// A segment also carries an error word: a rank that fails writes its rank
// into the error word of every local peer, so their waits end at once
// instead of running into the timeout. A peer that is SIGKILLed is seen
// through /proc/<pid> (gone or zombie).
#pragma once

#include "Transport/Link.h"

#include <atomic>
#include <memory>
#include <string>

namespace hetccl {

struct ShmSegHeader {
  uint64_t magic;
  std::atomic<int32_t> errorRank; // rank+1 of a local peer that failed, 0 if none
  // Doorbell: peers bump it after writing into one of our rings or freeing
  // space in a ring we write to; an idle owner sleeps on it (futex) rather
  // than spinning, which matters when ranks outnumber cores.
  std::atomic<uint32_t> doorbell;
  std::atomic<uint32_t> sleepers;
  int32_t ownerRank;
  uint32_t nslots;
  uint64_t ringBytes;
  uint64_t boardBytes;   // data bytes per board slot (0: no board)
  uint64_t oneShotLimit; // the owner's one-shot limit: every local rank must use the same
};

class ShmSegment {
public:
  // Creates (owner) or opens a segment of `nslots` rings of ringBytes each
  // and a board of two slots of boardBytes each; open() checks that the
  // owner uses the same sizes and one-shot limit.
  static std::unique_ptr<ShmSegment> create(const std::string& name, int ownerRank, uint32_t nslots, uint64_t ringBytes,
                                            uint64_t boardBytes, uint64_t oneShotLimit);
  static std::unique_ptr<ShmSegment> open(const std::string& name, uint32_t nslots, uint64_t ringBytes,
                                          uint64_t boardBytes, uint64_t oneShotLimit);
  ~ShmSegment();
  void unlink(); // remove the name; mappings stay valid
  ShmSegHeader* header() const { return static_cast<ShmSegHeader*>(base_); }
  char* slot(uint32_t i) const;
  char* board() const; // the small-message board (ShmBoard.h)

private:
  ShmSegment() = default;
  void* base_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  bool owner_ = false;
};

class ShmLink : public Link {
public:
  ShmLink(int peer, int peerPid, ShmSegment* mine, uint32_t inSlot, ShmSegment* theirs, uint32_t outSlot,
          uint64_t ringBytes, int myRank);
  size_t trySend(const void* p, size_t n) override;
  size_t tryRecv(void* p, size_t n) override;
  const char* peek(size_t* avail) override;
  void release(size_t n) override;
  void checkPeer() override;
  void poison() override;
  const char* name() const override { return "shm"; }
  std::atomic<uint32_t>* doorbell() override;
  struct Ring; // head/tail of one ring (defined in Shm.cpp)

private:
  void ring();
  int peer_, peerPid_, myRank_;
  ShmSegment* mine_;
  ShmSegment* theirs_;
  Ring* in_;
  Ring* out_;
  char* inData_;
  char* outData_;
  uint64_t cap_;
};

// Sleeps on a doorbell until it moves from `seen` or timeoutUs passes.
void doorbellWait(std::atomic<uint32_t>* bell, uint32_t seen, int64_t timeoutUs);

// True if pid has exited or is a zombie.
bool processGone(int pid);

} // namespace hetccl
