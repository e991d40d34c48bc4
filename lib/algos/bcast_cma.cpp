// bcast "cma": single node, every rank reads the root's buffer in place.
//   Steps:    the root publishes its buffer's address to every rank
//             (flags); each copies the vector straight from the root's
//             buffer (cross-memory attach) and signals the root, which
//             returns once all have read.
//   Traffic:  one copy of n per non-root, all at once; no messages.
//   Scratch:  none; shared: flag lines only.
//   Rounds:   2 flag rounds.
//   Cost:     2 flag rounds + n / copy bandwidth (the readers share the
//             memory bandwidth), against the shared segment's pipelined
//             copy in at the root and copy out at every reader.
#include "algos/cma_common.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank(), root = a.root;
  const size_t n = a.count * b.elem_size();
  if (p == 1 || n == 0) return;
  if (r == root) {
    for_each_peer_from_next(b, [&](int q) { b.publish_buffers(q); });
    b.end_round();
    for_each_peer_from_next(b, [&](int q) { b.shm_wait(q); });
    return;
  }
  b.learn_buffers(root);
  b.end_round();
  b.peer_read(root, output(), output(), n);
  b.shm_signal(root);
}

}  // namespace

extern const Algorithm kBcastCma{
    "cma", Collective::Bcast,
    "single node: every rank copies the vector straight from the root's buffer (one copy)",
    refuse_cma, build};

}  // namespace tutti::algos
