// scatter "cma": single node, every rank reads its block in place from the
// root's send buffer.
//   Steps:    the root publishes its buffer addresses to every rank
//             (flags); each copies its block straight from the root's
//             input (cross-memory attach) and signals the root, which
//             copies its own block meanwhile and returns once all have read.
//   Traffic:  one copy of m per non-root, all at once (the root copies
//             nothing but its own block); no messages.
//   Scratch:  none; shared: flag lines only.
//   Rounds:   2 flag rounds.
#include "algos/cma_common.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank(), root = a.root;
  const size_t m = a.count * b.elem_size();
  auto own_block = [&] {
    if (r == root && !a.in_place) b.copy(output(), input(static_cast<size_t>(r) * m), m);
  };
  if (p == 1 || m == 0) return own_block();
  append_all_read_root(
      b, root, [&] { b.peer_read(root, output(), input(static_cast<size_t>(r) * m), m); }, own_block);
}

}  // namespace

extern const Algorithm kScatterCma{
    "cma", Collective::Scatter,
    "single node: every rank copies its block straight from the root's buffer (one copy)",
    refuse_cma, build};

}  // namespace tutti::algos
