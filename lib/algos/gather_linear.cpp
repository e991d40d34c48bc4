// gather "linear": every rank sends its block straight to the root, which
// posts all P-1 receives at once.
//   Scratch:  none.
//   Rounds:   1. Cost: alpha + (P-1) m beta at the root for blocks of m
//             bytes, with P-1 messages converging on it (incast).
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
    b.send(a.root, input(), block);
    return;
  }
  if (!a.in_place) b.copy(output(static_cast<size_t>(a.root) * block), input(), block);
  for (int q = 0; q < p; ++q)
    if (q != a.root) b.recv(q, output(static_cast<size_t>(q) * block), block);
}

}  // namespace

extern const Algorithm kGatherLinear{
    "linear", Collective::Gather, "every rank sends to the root directly; one round", accept_all,
    build};

}  // namespace tutti::algos
