// Building blocks of the single-copy algorithms (*_cma.cpp): on one node,
// a rank reads its peers' buffers in place (node/peer_memory.hpp), one copy
// per byte moved instead of the shared segment's two (in, then out). The
// segment's flag lines carry the buffer addresses and the closing signals.
//
// Every call is: owners publish their buffers' addresses to their readers
// (a flag each, the addresses in its line); readers copy; every reader
// signals each owner it read from, and an owner returns only after all its
// readers did, since its caller may reuse the buffers at once.
#pragma once

#include "algos/shm_common.hpp"

namespace tutti::algos {

inline Refusal refuse_cma(const CollArgs&, const Topology& topo) {
  if (topo.nnodes != 1) return "needs all ranks on one node";
  if (!topo.peer_reads)
    return "ranks cannot read each other's memory (cross-memory attach unavailable, or TUTTI_CMA=0)";
  if (topo.shared_bytes == 0)
    return "no shared-memory segment for its flags (TUTTI_SHM_BYTES=0 or unavailable)";
  return std::nullopt;
}

// The order in which rank r visits its P-1 peers: r+1, r+2, ... so that
// the ranks do not all read from the same owner at once.
template <typename Visit>
void for_each_peer_from_next(const ScheduleBuilder& b, Visit visit) {
  for (int step = 1; step < b.nranks(); ++step) visit((b.rank() + step) % b.nranks());
}

// Every rank publishes its buffers to every other and learns theirs.
inline void append_all_publish(ScheduleBuilder& b) {
  for_each_peer_from_next(b, [&](int q) { b.publish_buffers(q); });
  for_each_peer_from_next(b, [&](int q) { b.learn_buffers(q); });
  b.end_round();
}

}  // namespace tutti::algos
