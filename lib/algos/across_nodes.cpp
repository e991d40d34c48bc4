#include "algos/across_nodes.hpp"

#include "algos/patterns.hpp"
#include "algos/recursive_doubling.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {

// The choice between ring and recursive doubling, from the cost terms in
// the header with this machine's inter-node link (about 25 us and 2 GB/s over
// TCP) and its reduction rate while the link is busy (about 2 GB/s: the
// operands come cold from memory, and the kernel's TCP copies share the
// cores); both are exact for any rank count, this only picks the faster.
// The reduction term decides on 2 nodes, where both move the same bytes:
// the ring reduces half the vector, a chunk while the next is in flight.
// Measured on 2 emulated nodes x 1 rank (tutti-bench --compare-mpi, one
// job per algorithm, 2026-11-26): 512 KiB 224 us against 258, 1 MiB 454
// against 1132, 2 MiB 1276 against 2278, 4 MiB 2444 against 4229.
// From 4 MiB the ring wins whatever the node count (8 MiB: 4.9 ms
// against 8.1 ms).
bool use_ring_across_nodes(int nodes, size_t bytes) {
  constexpr size_t kRingAlwaysBytes = 4 << 20;
  if (bytes >= kRingAlwaysBytes) return true;
  constexpr double kAlphaUs = 25, kLinkBytesPerUs = 2000, kReduceBytesPerUs = 2000;
  const double n = static_cast<double>(bytes), s = n / kLinkBytesPerUs, g = n / kReduceBytesPerUs;
  const double share = static_cast<double>(nodes - 1) / nodes;
  const double ring = 2 * (nodes - 1) * kAlphaUs + 2 * share * s + share * g;
  const double doubling = ceil_log2(nodes) * (kAlphaUs + s + g);
  return ring < doubling;
}

void append_allreduce_across_nodes(ScheduleBuilder& b, BufRef data, size_t count) {
  const size_t es = b.elem_size();
  if (use_ring_across_nodes(b.nranks(), count * es)) {
    const BlockPartition parts = aligned_blocks(count, b.nranks(), es);
    append_ring_reduce_scatter_inplace(b, parts, data);
    b.finalize(data + parts.offset(b.rank()) * es, parts.size(b.rank()) * es);
    append_ring_allgather(b, parts, data);
  } else {
    append_recursive_doubling_inplace(b, data, count * es);
    b.finalize(data, count * es);
  }
  b.end_round();
}

}  // namespace tutti::algos
