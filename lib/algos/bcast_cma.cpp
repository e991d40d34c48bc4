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
  const size_t n = a.count * b.elem_size();
  if (b.nranks() == 1 || n == 0) return;
  append_all_read_root(b, a.root, [&] { b.peer_read(a.root, output(), output(), n); });
}

}  // namespace

extern const Algorithm kBcastCma{
    "cma", Collective::Bcast,
    "single node: every rank copies the vector straight from the root's buffer (one copy)",
    refuse_cma, build};

}  // namespace tutti::algos
