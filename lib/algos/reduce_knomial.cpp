// reduce "knomial": a k-nomial tree towards the root (knomial.hpp), whole
// message at a time: a rank receives its children's partial results at
// once, reduces them into its own in child order, and sends the sum to its
// parent.
//   Radix:    params.radix (default 4).
//   Scratch:  one vector per child (up to (k-1) ceil(log_k P)) while that
//             stays within 4 MiB; beyond, one landing vector, the children
//             received one at a time (large messages are bandwidth-bound:
//             receiving them at once gains nothing). One more vector for
//             the partial sum on ranks other than the root.
//   Rounds:   2 (receive from every child; send to the parent), or one per
//             child plus one beyond the scratch limit.
//   Cost:     ceil(log_k P) (alpha + (k-1) n beta + (k-1) n gamma).
//   Results:  the root's result is computed once (bitwise the same on
//             every run). Any rank count, count and root; every op. For
//             small messages on many ranks.
#include "algos/knomial.hpp"
#include "algos/registry.hpp"
#include "engine/schedule.hpp"

namespace tutti::algos {
namespace {

// Landing vectors for all children at once up to this many bytes.
constexpr size_t kMaxLandingBytes = 4 << 20;

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t n = a.count * b.elem_size();
  const KnomialTree tree{b.rank(), b.nranks(), a.root, knomial_radix(a.params.radix)};
  const int parent = tree.parent();
  const std::vector<int> children = tree.children();
  if (children.empty()) {  // a leaf (or a lone root)
    if (parent >= 0) b.send(parent, input(), n);
    else if (!a.in_place) b.copy(output(), input(), n);
    if (parent < 0) b.finalize(output(), n);
    return;
  }
  // The partial sum: in the output on the root, in scratch elsewhere.
  const BufRef acc = parent < 0 ? output() : b.scratch(n);
  // Either way the sum is input op child 0 op child 1 ..., in child order.
  if (children.size() * n <= kMaxLandingBytes) {
    const BufRef landings = b.scratch(children.size() * n);
    for (size_t i = 0; i < children.size(); ++i) b.recv(children[i], landings + i * n, n);
    b.end_round();
    b.reduce(acc, input(), landings, n);
    for (size_t i = 1; i < children.size(); ++i) b.reduce(acc, acc, landings + i * n, n);
  } else {
    const BufRef landing = b.scratch(n);
    for (size_t i = 0; i < children.size(); ++i) {
      b.recv(children[i], landing, n);
      b.end_round();
      b.reduce(acc, i == 0 ? input() : acc, landing, n);
    }
  }
  if (parent >= 0) b.send(parent, acc, n);
  else b.finalize(output(), n);
}

}  // namespace

extern const Algorithm kReduceKnomial{
    "knomial", Collective::Reduce,
    "k-nomial tree towards the root (radix k, default 4): log_k(P) levels; small messages on "
    "many ranks",
    accept_all, build};

}  // namespace tutti::algos
