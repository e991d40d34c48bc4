// alltoall "bruck" (Bruck, Ho, Kipnis, Upfal & Weathersby, 1997): ceil(log2 P)
// rounds instead of P-1, at the price of sending each block up to log2 P
// times. The choice for small blocks on many ranks, where latency dominates.
//
// Index i stands for "the block that travels i ranks forward": at the start
// rank r's block i is its input block (r+i) mod P. In round k every rank
// sends the blocks whose index has bit k set to rank r+2^k, which stores them
// under the same index; after the last round block i on rank r came from rank
// r-i and belongs in output block (r-i) mod P.
//
// The classic formulation rotates the input into a P-block scratch array
// first and inverse-rotates at the end. Here there is no such array: block i
// is read from the input until it is first received, and every received block
// i is stored straight at its final place, output block (r-i) mod P. Within
// one round the indices with bit k set form runs [a, a+2^k) in which only a
// is still in the input; the rest is one contiguous (possibly wrapped) output
// range, so packing and unpacking take a few copies per run rather than one
// per block (about 2.5 P copies over all rounds, not P log P).
//
//   Steps:    copy the own block; round k: unpack the message of round k-1
//             into the output, pack the blocks with bit k set into scratch,
//             send the pack to r+2^k, receive the same indices from r-2^k;
//             unpack the last message.
//             In place (Input == Output): output block (r-i) is block P-i's
//             input, which may not have been sent yet, so the input is first
//             copied to scratch and read from there.
//   Scratch:  two messages of at most floor(P/2) blocks each (about n bytes,
//             n = P * count * elem_size); in place n more.
//   Rounds:   ceil(log2 P). Bytes per rank: about n/2 per round, n/2 log2 P.
//   Cost:     log2 P alpha + n/2 log2 P beta + local copies of the same size.
//   Any rank count and count.
#include <algorithm>
#include <vector>

#include "algos/patterns.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

struct Run {
  int first, size;  // indices [first, first + size)
};

// The runs of indices in [1, p) with bit `dist` set.
std::vector<Run> runs_of(int dist, int p) {
  std::vector<Run> runs;
  for (int a = dist; a < p; a += 2 * dist) runs.push_back({a, std::min(dist, p - a)});
  return runs;
}

int blocks_in(const std::vector<Run>& runs) {
  int n = 0;
  for (const Run& run : runs) n += run.size;
  return n;
}

// Output blocks [start, start + n) mod p as at most two contiguous pieces.
template <typename F>
void for_circular(int start, int n, int p, F&& piece) {
  const int head = std::min(n, p - start);
  if (head > 0) piece(start, head, 0);
  if (n > head) piece(0, n - head, head);
}

void build(ScheduleBuilder& b) {
  const int p = b.nranks(), r = b.rank();
  const size_t block = b.args().count * b.elem_size();
  const bool in_place = b.args().in_place;
  if (!in_place) b.copy(output(r * block), input(r * block), block);
  if (p == 1) return;

  int max_blocks = 0;
  for (int dist = 1; dist < p; dist <<= 1)
    max_blocks = std::max(max_blocks, blocks_in(runs_of(dist, p)));
  BufRef original = input();
  if (in_place) {
    original = b.scratch(static_cast<size_t>(p) * block);
    b.copy(original, output(), static_cast<size_t>(p) * block);
  }
  const BufRef pack = b.scratch(static_cast<size_t>(max_blocks) * block);
  const BufRef landing = b.scratch(static_cast<size_t>(max_blocks) * block);

  // Within a run the message holds indices first+size-1 down to first, i.e.
  // output blocks (r-first-size+1) .. (r-first) in ascending order.
  auto unpack = [&](const std::vector<Run>& runs) {
    size_t pos = 0;
    for (const Run& run : runs) {
      for_circular(mod(r - run.first - run.size + 1, p), run.size, p,
                   [&](int start, int n, int at) {
                     b.copy(output(start * block), landing + (pos + at) * block, n * block);
                   });
      pos += run.size;
    }
  };

  std::vector<Run> previous;
  for (int dist = 1; dist < p; dist <<= 1) {
    unpack(previous);
    const std::vector<Run> runs = runs_of(dist, p);
    size_t pos = 0;
    for (const Run& run : runs) {
      // Indices first+1.. were received in earlier rounds (they have lower
      // bits set); index first, whose lowest set bit is this round's, was not.
      for_circular(mod(r - run.first - run.size + 1, p), run.size - 1, p,
                   [&](int start, int n, int at) {
                     b.copy(pack + (pos + at) * block, output(start * block), n * block);
                   });
      b.copy(pack + (pos + run.size - 1) * block, original + mod(r + run.first, p) * block, block);
      pos += run.size;
    }
    const size_t bytes = static_cast<size_t>(blocks_in(runs)) * block;
    b.send(mod(r + dist, p), pack, bytes);
    b.recv(mod(r - dist, p), landing, bytes);
    b.end_round();
    previous = runs;
  }
  unpack(previous);
}

}  // namespace

extern const Algorithm kAlltoallBruck{
    "bruck", Collective::Alltoall,
    "ceil(log2 P) rounds of packed half-buffer exchanges at distance 2^k; for small blocks",
    accept_all, build};

}  // namespace tutti::algos
