// Ring all-reduce over encoded chunks. Reduce-scatter: at each hop a rank
// encodes its partial sum of one chunk, sends it, and adds the decoded chunk
// it receives into its own. All-gather: the owner of each finished chunk
// encodes it once and decodes it itself too, and the encoded bytes travel
// the ring unchanged, so every rank ends with the same values bit for bit.
#include "Algorithms/Algorithms.h"
#include "Common/Error.h"
#include "Compression/Codec.h"
#include "Compression/Compression.h"

namespace hetccl {

static std::unique_ptr<Codec> codecFor(hetcclCompression_t z) {
  switch (z) {
  case hetcclCompressFp16: return makeCast16Codec(false);
  case hetcclCompressBf16: return makeCast16Codec(true);
  case hetcclCompressInt8: return makeInt8Codec();
  default: fail(hetcclInternalError, "no codec for this compression");
  }
}

static int mod(int a, int p) { return ((a % p) + p) % p; }

void compressedRingAllReduce(hetcclComm* c, float* buf, size_t count, hetcclCompression_t z) {
  int p = c->nranks, i = c->rank;
  if (p == 1) return;
  auto codec = codecFor(z);
  auto cb = [&](int k) { return chunkBegin(count, k, p); };
  auto cn = [&](int k) { return cb(k + 1) - cb(k); };
  size_t maxEnc = codec->encodedBytes(cn(0) + 1);
  char* encS = c->scratchBuf(0, maxEnc);
  char* encR = c->scratchBuf(1, maxEnc);
  int next = mod(i + 1, p), prev = mod(i - 1, p);
  for (int s = 0; s < p - 1; ++s) {
    int sc = mod(i - s - 1, p), rc = mod(i - s - 2, p);
    codec->encode(buf + cb(sc), cn(sc), encS);
    c->fabric.run({P2POp::sendTo(next, encS, codec->encodedBytes(cn(sc))),
                   P2POp::recvFrom(prev, encR, codec->encodedBytes(cn(rc)))});
    codec->decodeAdd(encR, cn(rc), buf + cb(rc));
  }
  // All-gather of encoded final chunks; chunk k's bytes sit at encOff[k].
  std::vector<size_t> encOff(p + 1, 0);
  for (int k = 0; k < p; ++k) encOff[k + 1] = encOff[k] + codec->encodedBytes(cn(k));
  char* all = c->scratchBuf(2, encOff[p] + 1);
  codec->encode(buf + cb(i), cn(i), all + encOff[i]);
  codec->decode(all + encOff[i], cn(i), buf + cb(i));
  for (int s = 0; s < p - 1; ++s) {
    int sc = mod(i - s, p), rc = mod(i - s - 1, p);
    c->fabric.run({P2POp::sendTo(next, all + encOff[sc], encOff[sc + 1] - encOff[sc]),
                   P2POp::recvFrom(prev, all + encOff[rc], encOff[rc + 1] - encOff[rc])});
    codec->decode(all + encOff[rc], cn(rc), buf + cb(rc));
  }
}

} // namespace hetccl
