// bcast "tree": binomial tree from the root, pipelined in segments (see
// binomial.hpp).
//   Steps:    a rank receives segment 0 from its parent, then sends each
//             segment to its children one at a time, largest subtree first,
//             while the next segment comes in; leaves receive every segment
//             in one round. One segment (small messages) is the classic
//             binomial broadcast.
//   Segments: params.chunk_bytes (default 256 KiB).
//   Scratch:  none (everything moves in the output).
//   Rounds:   S*children + 1 for S segments (ceil(log2 P) children at most).
//             Cost, unpipelined: ceil(log2 P) (alpha + n beta); pipelined,
//             about (S + ceil(log2 P)) alpha + children * n beta on the
//             busiest rank.
//   Any rank count, count and root. Best for small messages.
#include "algos/binomial.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const BinomialTree tree{b.rank(), b.nranks(), a.root};
  append_binomial_bcast(b, tree, output(), a.count * b.elem_size(), binomial_segment_bytes(b));
}

}  // namespace

extern const Algorithm kBcastTree{
    "tree", Collective::Bcast, "binomial tree from the root, pipelined in segments", accept_all,
    build};

}  // namespace tutti::algos
