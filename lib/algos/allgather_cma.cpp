// allgather "cma": single node, every rank reads its peers' blocks in place.
//   Steps:    every rank publishes its buffer addresses to all (flags);
//             each copies the P-1 other blocks straight from their owners'
//             buffers (cross-memory attach), then a full synchronisation
//             (no rank returns while its block is being read).
//   Traffic:  P-1 copies per rank, one per byte received; no messages.
//   Scratch:  none; shared: flag lines only.
//   Rounds:   2 flag rounds.
//   Cost:     2 flag rounds + (P-1) m / copy bandwidth, against the shared
//             segment's copy in and P copies out per rank.
#include "algos/cma_common.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t m = a.count * b.elem_size();
  // In place, the API points Input at this rank's block of Output.
  if (!a.in_place) b.copy(output(static_cast<size_t>(r) * m), input(), m);
  if (p == 1 || m == 0) return;
  append_all_publish(b);
  for_each_peer_from_next(b, [&](int q) { b.peer_read(q, output(static_cast<size_t>(q) * m), input(), m); });
  append_shm_sync_all(b);
}

}  // namespace

extern const Algorithm kAllgatherCma{
    "cma", Collective::Allgather,
    "single node: each rank copies its peers' blocks straight from their buffers (one copy)",
    refuse_cma, build};

}  // namespace tutti::algos
