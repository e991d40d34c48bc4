// reduce "binary_tree": a binary tree towards the root (heap-shaped in
// virtual ranks, patterns.hpp BinaryTree), pipelined in segments (see
// binomial_reduce.hpp): a rank reduces segment s from its two children and
// sends it to its parent while segment s+1 comes in.
//   Segments: params.chunk_bytes (default 256 KiB).
//   Scratch:  one segment (landing) on ranks with children, plus the vector
//             (the accumulator) on non-root ranks with children.
//   Rounds:   about 2S + 1 for S segments.
//   Cost:     about 2 (S + floor(log2 P)) (alpha + n/S (beta + gamma)):
//             every rank receives and reduces the vector at most twice (the
//             binomial "tree"'s root ceil(log2 P) times), against twice the
//             binomial tree's latency for one segment. For large vectors on
//             many ranks.
//   Any rank count, count and root; every op.
#include "algos/binomial_reduce.hpp"
#include "algos/patterns.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const BinaryTree tree{b.rank(), b.nranks(), b.args().root};
  append_tree_reduce(b, tree.parent(), tree.children());
}

}  // namespace

extern const Algorithm kReduceBinaryTree{
    "binary_tree", Collective::Reduce, "binary tree towards the root, pipelined in segments",
    accept_all, build};

}  // namespace tutti::algos
