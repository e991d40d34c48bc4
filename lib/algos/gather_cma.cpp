// gather "cma": single node, the root reads every block in place from the
// other ranks' send buffers.
//   Steps:    every non-root publishes its buffer addresses to the root
//             (flags); the root copies each block straight into its output
//             (cross-memory attach) and signals every rank, which returns
//             once its block has been read; then it copies its own.
//   Traffic:  P-1 copies of m at the root, one after another; no messages.
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
    if (r == root && !a.in_place) b.copy(output(static_cast<size_t>(r) * m), input(), m);
  };
  if (p == 1 || m == 0) return own_block();
  append_root_reads_all(
      b, root,
      [&] {
        for_each_peer_from_next(b, [&](int q) { b.peer_read(q, output(static_cast<size_t>(q) * m), input(), m); });
      },
      own_block);
}

}  // namespace

extern const Algorithm kGatherCma{
    "cma", Collective::Gather,
    "single node: the root copies every block straight from its owner's buffer (one copy)",
    refuse_cma, build};

}  // namespace tutti::algos
