// bcast "scatter_allgather" (van de Geijn; MPICH's large-message bcast): the
// vector is cut into P blocks, block i for virtual rank i = (rank - root)
// mod P; a binomial scatter hands every rank its block, then a ring
// allgather completes the vector everywhere.
//   Steps:    binomial scatter in the output (a subtree's blocks are
//             contiguous in virtual-rank order, so nothing is rotated); then
//             P-1 ring rounds: send block (v-s) to rank+1, receive block
//             (v-s-1) from rank-1 (virtual and real neighbours coincide).
//   Messages: the ring ones pipelined in params.chunk_bytes pieces.
//   Scratch:  none.
//   Rounds:   about ceil(log2 P) + P - 1. Cost: (log2 P + P - 1) alpha +
//             2 (P-1)/P n beta.
//   Any rank count, count (blocks may be empty when count < P) and root.
//   Best for large messages.
#include "algos/binomial.hpp"
#include "algos/registry.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks();
  if (p == 1) return;
  const size_t es = b.elem_size();
  const BinomialTree tree{b.rank(), p, a.root};
  const BlockPartition blocks = aligned_blocks(a.count, p, es);
  auto block_at = [&](int v) { return output(blocks.offset(v) * es); };
  append_binomial_scatter(b, tree, blocks, block_at, /*cut=*/0);

  // Ring allgather in virtual ranks: rank v starts with block v.
  const int v = tree.vrank();
  const size_t chunk = chunk_bytes_of(b);
  const int right = mod(b.rank() + 1, p), left = mod(b.rank() - 1, p);
  for (int s = 0; s < p - 1; ++s) {
    const int send_block = mod(v - s, p), recv_block = mod(v - s - 1, p);
    b.send(right, block_at(send_block), blocks.size(send_block) * es, chunk);
    b.recv(left, block_at(recv_block), blocks.size(recv_block) * es, chunk);
    b.end_round();
  }
}

}  // namespace

extern const Algorithm kBcastScatterAllgather{
    "scatter_allgather", Collective::Bcast,
    "binomial scatter of P blocks, then ring allgather (van de Geijn); large messages",
    accept_all, build};

}  // namespace tutti::algos
