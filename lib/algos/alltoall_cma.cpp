// alltoall "cma": single node, every rank reads its blocks in place from
// its peers' send buffers.
//   Steps:    every rank publishes its buffer addresses to all (flags);
//             each copies block r of every peer's input straight into its
//             output (cross-memory attach), then a full synchronisation (no
//             rank returns while its blocks are being read). In place, a
//             rank first copies its buffer to scratch, which peers read
//             instead (its output changes under them otherwise).
//   Traffic:  P-1 copies of m per rank, one per byte received (in place:
//             plus one copy of P m); no messages.
//   Scratch:  none (in place: P m); shared: flag lines only.
//   Rounds:   2 flag rounds.
#include "algos/cma_common.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t m = a.count * b.elem_size();
  const size_t own = static_cast<size_t>(r) * m;
  if (!a.in_place) b.copy(output(own), input(own), m);
  if (p == 1 || m == 0) return;
  if (a.in_place) {
    const BufRef copy = b.scratch(static_cast<size_t>(p) * m);
    b.copy(copy, input(), static_cast<size_t>(p) * m);
    b.publish_as_input(copy);
  }
  append_all_publish(b);
  for_each_peer_from_next(b, [&](int q) {
    b.peer_read(q, output(static_cast<size_t>(q) * m), input(own), m);
  });
  append_shm_sync_all(b);
}

}  // namespace

extern const Algorithm kAlltoallCma{
    "cma", Collective::Alltoall,
    "single node: each rank copies its blocks straight from its peers' buffers (one copy)",
    refuse_cma, build};

}  // namespace tutti::algos
