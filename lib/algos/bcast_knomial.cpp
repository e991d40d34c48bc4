// bcast "knomial": a k-nomial tree from the root (knomial.hpp), whole
// message at a time: a rank receives the message from its parent, then
// sends it to all its children at once.
//   Radix:    params.radix (default 4).
//   Scratch:  none (everything moves in the output).
//   Rounds:   2 (receive, then send to every child).
//   Cost:     ceil(log_k P) (alpha + (k-1) n beta): each level costs one
//             latency and the k-1 sends of a level share the sender's link.
//   Any rank count, count and root. For small messages on many ranks,
//   where binomial's ceil(log2 P) latencies dominate; large messages want
//   the pipelined tree or scatter_allgather.
#include "algos/knomial.hpp"
#include "algos/registry.hpp"
#include "engine/schedule.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t n = a.count * b.elem_size();
  const KnomialTree tree{b.rank(), b.nranks(), a.root, knomial_radix(a.params.radix)};
  const int parent = tree.parent();
  if (parent >= 0) {
    b.recv(parent, output(), n);
    b.end_round();
  }
  for (int child : tree.children()) b.send(child, output(), n);
}

}  // namespace

extern const Algorithm kBcastKnomial{
    "knomial", Collective::Bcast,
    "k-nomial tree from the root (radix k, default 4): log_k(P) levels; small messages on many ranks",
    accept_all, build};

}  // namespace tutti::algos
