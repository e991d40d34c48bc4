// scatter "linear": the root sends every rank its block directly, all P-1
// sends posted at once.
//   Scratch:  none.
//   Rounds:   1. Cost: alpha + (P-1) m beta at the root for blocks of m
//             bytes.
//   Any rank count, count and root; in place at the root. For small P or
//   large blocks.
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks();
  const size_t block = a.count * b.elem_size();
  if (b.rank() != a.root) {
    b.recv(a.root, output(), block);
    return;
  }
  if (!a.in_place) b.copy(output(), input(static_cast<size_t>(a.root) * block), block);
  for (int q = 0; q < p; ++q)
    if (q != a.root) b.send(q, input(static_cast<size_t>(q) * block), block);
}

}  // namespace

extern const Algorithm kScatterLinear{
    "linear", Collective::Scatter, "the root sends every block directly; one round", accept_all,
    build};

}  // namespace tutti::algos
