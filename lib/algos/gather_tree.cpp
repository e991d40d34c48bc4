// gather "tree": binomial tree to the root (MPICH's gather).
//   Steps:    an inner rank copies its block into scratch and receives its
//             children's subtrees next to it (virtual-rank order, all in one
//             round), then sends its whole subtree to its parent; a leaf
//             sends its input. The root receives straight into its output:
//             the one subtree that wraps past rank P-1 there comes as two
//             messages (binomial.hpp's cut), so the root needs no scratch
//             and no final rotation.
//   Scratch:  subtree_size(v) blocks on inner non-root ranks (at most P/2).
//   Rounds:   2 on inner ranks, 1 elsewhere; ceil(log2 P) levels. Cost:
//             ceil(log2 P) alpha + (P-1) m beta for blocks of m bytes.
//   Any rank count, count and root; in place at the root.
#include "algos/binomial.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks();
  const size_t block = a.count * b.elem_size();
  const BinomialTree tree{b.rank(), p, a.root};
  const BlockPartition blocks{a.count * static_cast<size_t>(p), p};
  const int v = tree.vrank();
  BlockLocator locate;
  if (v == 0) {
    if (!a.in_place) b.copy(output(static_cast<size_t>(a.root) * block), input(), block);
    locate = [&](int u) { return output(static_cast<size_t>(tree.real(u)) * block); };
  } else if (tree.children().empty()) {
    locate = [](int) { return input(); };  // only its own block
  } else {
    const BufRef subtree = b.scratch(static_cast<size_t>(tree.subtree_size(v)) * block);
    b.copy(subtree, input(), block);
    locate = [&, subtree](int u) { return subtree + static_cast<size_t>(u - v) * block; };
  }
  append_binomial_gather(b, tree, blocks, locate, mod(-a.root, p));
}

}  // namespace

extern const Algorithm kGatherTree{
    "tree", Collective::Gather, "binomial tree to the root; log2(P) levels", accept_all, build};

}  // namespace tutti::algos
