// bcast "binary_tree": a binary tree from the root (heap-shaped in virtual
// ranks, patterns.hpp BinaryTree), pipelined in segments: a rank receives
// segment s+1 from its parent while it sends segment s to its two children.
//   Segments: params.chunk_bytes (default 256 KiB).
//   Scratch:  none (everything moves in the output).
//   Rounds:   2S + 1 for S segments.
//   Cost:     about 2 (S + floor(log2 P)) (alpha + n/S beta): every rank
//             sends the vector at most twice (the binomial "tree"'s root
//             ceil(log2 P) times), against twice the binomial tree's
//             latency for one segment. For large vectors on many ranks, where
//             the binomial tree's root is the bottleneck and a ring
//             ("ring") waits P-1 segment times to fill its pipeline.
//   Any rank count, count and root.
#include "algos/binomial.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const BinaryTree tree{b.rank(), b.nranks(), a.root};
  append_pipelined_bcast(b, tree.parent(), tree.children(), output(), a.count * b.elem_size(),
                         binomial_segment_bytes(b));
}

}  // namespace

extern const Algorithm kBcastBinaryTree{
    "binary_tree", Collective::Bcast, "binary tree from the root, pipelined in segments",
    accept_all, build};

}  // namespace tutti::algos
