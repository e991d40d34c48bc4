// scatter "tree": binomial tree from the root, the mirror of gather "tree".
//   Steps:    the root sends each child its subtree's blocks straight from
//             its input, largest subtree first, one child a round (the
//             subtree that wraps past rank P-1 goes as two messages); an
//             inner rank receives its subtree into scratch, forwards its
//             children's parts the same way, then copies its own block out;
//             a leaf receives into its output.
//   Scratch:  subtree_size(v) blocks on inner non-root ranks (at most P/2).
//   Rounds:   1 + children (ceil(log2 P) at most). Cost: ceil(log2 P) alpha
//             + (P-1) m beta for blocks of m bytes.
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
  BufRef subtree;
  const bool inner = v != 0 && !tree.children().empty();
  if (v == 0) {
    if (!a.in_place) b.copy(output(), input(static_cast<size_t>(a.root) * block), block);
    locate = [&](int u) { return input(static_cast<size_t>(tree.real(u)) * block); };
  } else if (!inner) {
    locate = [](int) { return output(); };  // only its own block
  } else {
    subtree = b.scratch(static_cast<size_t>(tree.subtree_size(v)) * block);
    locate = [&, subtree](int u) { return subtree + static_cast<size_t>(u - v) * block; };
  }
  append_binomial_scatter(b, tree, blocks, locate, mod(-a.root, p));
  if (inner) b.copy(output(), subtree, block);
}

}  // namespace

extern const Algorithm kScatterTree{
    "tree", Collective::Scatter, "binomial tree from the root; log2(P) levels", accept_all,
    build};

}  // namespace tutti::algos
