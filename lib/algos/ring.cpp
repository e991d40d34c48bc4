#include "algos/ring.hpp"

#include <algorithm>

namespace tutti::algos {
namespace {

size_t max_block_bytes(const BlockPartition& blocks, size_t esize) {
  return blocks.largest() * esize;
}

}  // namespace

// Step s (0..P-2): send block (r-s-1) to the right neighbour, receive block
// (r-s-2) from the left and reduce it; the last step receives block r.
void append_ring_reduce_scatter(ScheduleBuilder& b, const BlockPartition& blocks, BufRef in,
                                BufRef result, bool result_aliases_input) {
  const int p = b.nranks(), r = b.rank();
  const size_t es = b.elem_size();
  const size_t chunk = chunk_bytes_of(b);
  if (p == 1) {
    b.copy(result, in, blocks.size(0) * es);
    return;
  }
  const size_t max_bytes = max_block_bytes(blocks, es);
  const BufRef landing = b.scratch(max_bytes);
  const BufRef acc[2] = {b.scratch(max_bytes), b.scratch(max_bytes)};
  const int right = mod(r + 1, p), left = mod(r - 1, p);
  for (int s = 0; s < p - 1; ++s) {
    const int send_block = mod(r - s - 1, p), recv_block = mod(r - s - 2, p);
    const BufRef send_from = s == 0 ? in + blocks.offset(send_block) * es : acc[(s - 1) % 2];
    const bool last = s == p - 2;
    const BufRef reduce_to = last && !result_aliases_input ? result : acc[s % 2];
    const size_t recv_bytes = blocks.size(recv_block) * es;
    b.send(right, send_from, blocks.size(send_block) * es, chunk);
    b.recv_reduce(left, reduce_to, in + blocks.offset(recv_block) * es, landing, recv_bytes, chunk);
    b.end_round();
    if (last && result_aliases_input) b.copy(result, acc[s % 2], recv_bytes);
  }
  b.finalize(result, blocks.size(r) * es);
}

void append_ring_reduce_scatter_inplace(ScheduleBuilder& b, const BlockPartition& blocks,
                                        BufRef work) {
  const int p = b.nranks(), r = b.rank();
  if (p == 1) return;
  const size_t es = b.elem_size();
  const size_t chunk = chunk_bytes_of(b);
  const BufRef landing = b.scratch(max_block_bytes(blocks, es));
  const int right = mod(r + 1, p), left = mod(r - 1, p);
  for (int s = 0; s < p - 1; ++s) {
    const int send_block = mod(r - s - 1, p), recv_block = mod(r - s - 2, p);
    const BufRef target = work + blocks.offset(recv_block) * es;
    b.send(right, work + blocks.offset(send_block) * es, blocks.size(send_block) * es, chunk);
    b.recv_reduce(left, target, target, landing, blocks.size(recv_block) * es, chunk);
    b.end_round();
  }
}

// Step s: send block (r-s) to the right, receive block (r-s-1) from the left.
void append_ring_allgather(ScheduleBuilder& b, const BlockPartition& blocks, BufRef work) {
  const int p = b.nranks(), r = b.rank();
  const size_t es = b.elem_size();
  const size_t chunk = chunk_bytes_of(b);
  const int right = mod(r + 1, p), left = mod(r - 1, p);
  for (int s = 0; s < p - 1; ++s) {
    const int send_block = mod(r - s, p), recv_block = mod(r - s - 1, p);
    b.send(right, work + blocks.offset(send_block) * es, blocks.size(send_block) * es, chunk);
    b.recv(left, work + blocks.offset(recv_block) * es, blocks.size(recv_block) * es, chunk);
    b.end_round();
  }
}

}  // namespace tutti::algos
