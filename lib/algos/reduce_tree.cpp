// reduce "tree": binomial-tree reduce towards the root, pipelined in
// segments (see binomial_reduce.hpp).
//   Steps:    a rank reduces segment s from each child in turn (smallest
//             subtree first) and sends it to its parent while segment s+1
//             comes in; leaves send their input at once. The root reduces
//             into its output (in place: its input is its output) and
//             finalizes (avg).
//   Segments: params.chunk_bytes (default 256 KiB).
//   Scratch:  one segment (landing) on ranks with children, plus the vector
//             (the accumulator) on non-root ranks with children.
//   Rounds:   about S*children + 1 for S segments (ceil(log2 P) children at
//             most). Cost, unpipelined: ceil(log2 P) (alpha + n beta + n gamma);
//             pipelined, the n terms approach children * n (beta + gamma).
//   Any rank count, count and root; every op.
#include "algos/binomial_reduce.hpp"
#include "algos/patterns.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const BinomialTree tree{b.rank(), b.nranks(), b.args().root};
  append_tree_reduce(b, tree.parent(), tree.children());
}

}  // namespace

extern const Algorithm kReduceTree{
    "tree", Collective::Reduce, "binomial tree towards the root, pipelined in segments",
    accept_all, build};

}  // namespace tutti::algos
