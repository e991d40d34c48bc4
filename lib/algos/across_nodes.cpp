#include "algos/across_nodes.hpp"

#include <algorithm>

#include "algos/patterns.hpp"
#include "algos/recursive_halving.hpp"
#include "algos/recursive_doubling.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {

// The choice between ring and recursive doubling (and Rabenseifner's
// recursive halving beyond 4 nodes), from the cost terms in
// the header with this machine's inter-node link (about 25 us and 2 GB/s over
// TCP) and its reduction rate while the link is busy (about 2 GB/s: the
// operands come cold from memory, and the kernel's TCP copies share the
// cores); both are exact for any rank count, this only picks the faster.
// The reduction term decides on 2 nodes, where both move the same bytes:
// the ring reduces half the vector, a chunk while the next is in flight.
// Measured on 2 emulated nodes x 1 rank (tutti-bench --compare-mpi, one
// job per algorithm, 2026-11-26): 512 KiB 224 us against 258, 1 MiB 454
// against 1132, 2 MiB 1276 against 2278, 4 MiB 2444 against 4229.
// From 4 MiB the ring beats doubling whatever the node count (8 MiB: 4.9
// ms against 8.1 ms); beyond 4 nodes halving, which moves the ring's bytes
// in log2(N) steps, is weighed first.
AcrossNodes choose_across_nodes(int nodes, size_t bytes) {
  constexpr double kAlphaUs = 25, kLinkBytesPerUs = 2000, kReduceBytesPerUs = 2000;
  const double n = static_cast<double>(bytes), s = n / kLinkBytesPerUs, g = n / kReduceBytesPerUs;
  const double share = static_cast<double>(nodes - 1) / nodes;
  const double ring = 2 * (nodes - 1) * kAlphaUs + 2 * share * s + share * g;
  const double doubling = ceil_log2(nodes) * (kAlphaUs + s + g);
  // Beyond the node counts measured (up to 4), Rabenseifner where its terms
  // are the lowest: log-depth like doubling, the ring's bytes. Its fold
  // costs a whole vector more where the node count is not a power of two.
  constexpr int kMeasuredNodes = 4;
  if (nodes > kMeasuredNodes) {
    const int pof2 = floor_power_of_two(nodes);
    const double fold = pof2 == nodes ? 0 : 2 * kAlphaUs + 2 * s + g;
    const double halving = 2 * ceil_log2(pof2) * kAlphaUs + 2 * share * s + share * g + fold;
    if (halving < ring && halving < doubling) return AcrossNodes::Halving;
  }
  constexpr size_t kRingAlwaysBytes = 4 << 20;
  if (bytes >= kRingAlwaysBytes) return AcrossNodes::Ring;
  return ring < doubling ? AcrossNodes::Ring : AcrossNodes::Doubling;
}

namespace {

// Rabenseifner on `data` in place among the current group: the extra ranks
// fold in, recursive-halving reduce-scatter, finalize, recursive-doubling
// allgather, the result back to the folded ranks (as allreduce
// "recursive_halving", on one buffer).
void append_halving_inplace(ScheduleBuilder& b, BufRef data, size_t count) {
  const size_t es = b.elem_size(), n = count * es, chunk = chunk_bytes_of(b);
  const PowerOfTwoFold fold{b.rank(), b.nranks()};
  const int partner = fold.fold_partner();
  if (fold.folded()) {
    b.send(partner, data, n, chunk);
    b.end_round();
    b.recv(partner, data, n, chunk);
    return;
  }
  const ParticipantBlocks blocks = even_participant_blocks(count, fold.pof2(), es);
  // The folded vector lands in scratch: `data` is both operand and result.
  const BufRef landing =
      b.scratch(std::max(recursive_halving_landing_bytes(blocks, es), partner >= 0 ? n : 0));
  append_fold_in(b, fold, data, data, landing, n);
  append_recursive_halving_reduce_scatter(b, fold, blocks, data, data, landing);
  const int nr = fold.new_rank();
  b.finalize(data + blocks.offset(nr) * es, blocks.size(nr) * es);
  append_recursive_doubling_allgather(b, fold, blocks, data);
  if (partner >= 0) b.send(partner, data, n, chunk);
}

}  // namespace

void append_allreduce_across_nodes(ScheduleBuilder& b, BufRef data, size_t count) {
  const size_t es = b.elem_size();
  switch (choose_across_nodes(b.nranks(), count * es)) {
    case AcrossNodes::Ring: {
      const BlockPartition parts = aligned_blocks(count, b.nranks(), es);
      append_ring_reduce_scatter_inplace(b, parts, data);
      b.finalize(data + parts.offset(b.rank()) * es, parts.size(b.rank()) * es);
      append_ring_allgather(b, parts, data);
      break;
    }
    case AcrossNodes::Doubling:
      append_recursive_doubling_inplace(b, data, count * es);
      b.finalize(data, count * es);
      break;
    case AcrossNodes::Halving:
      append_halving_inplace(b, data, count);
      break;
  }
  b.end_round();
}

}  // namespace tutti::algos
