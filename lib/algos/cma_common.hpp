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

#include <algorithm>

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

// The node-aware single-copy algorithms (*_leader_cma.cpp): any number of
// nodes, each node's ranks reading each other in place; a node of one rank
// reads nobody.
inline Refusal refuse_node_cma(const CollArgs&, const Topology& topo) {
  if (topo.max_ranks_per_node == 1) return std::nullopt;
  if (topo.shared_bytes == 0)
    return "no shared-memory segment for its flags (TUTTI_SHM_BYTES=0 or unavailable)";
  if (!topo.peer_reads)
    return "the ranks of a node cannot read each other's memory (cross-memory attach "
           "unavailable, or TUTTI_CMA=0)";
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

// One to all (bcast, scatter): the root publishes its buffers to every
// rank and returns once all have read; each other rank learns them, runs
// `read()` (its peer reads from the root) and tells the root it is done.
// The root runs `own_work()` (its own block) after publishing, while the
// others read, not before: the call then costs the longer of the two, not
// their sum (as a root's own copy after MPI_Isend in an MPI library).
template <typename Read, typename OwnWork>
void append_all_read_root(ScheduleBuilder& b, int root, Read read, OwnWork own_work) {
  if (b.rank() == root) {
    for_each_peer_from_next(b, [&](int q) { b.publish_buffers(q); });
    b.end_round();
    own_work();
    for_each_peer_from_next(b, [&](int q) { b.shm_wait(q); });
    return;
  }
  b.learn_buffers(root);
  b.end_round();
  read();
  b.shm_signal(root);
}
template <typename Read>
void append_all_read_root(ScheduleBuilder& b, int root, Read read) {
  append_all_read_root(b, root, read, [] {});
}

// All to one (gather, reduce on 2 ranks): every other rank publishes its
// buffers to the root and returns once the root has read them; the root
// learns them all, runs `read()` (its peer reads and what it does with
// them), then lets every rank go. The root runs `own_work()` (its own
// block) last, after the others are free to return.
template <typename Read, typename OwnWork>
void append_root_reads_all(ScheduleBuilder& b, int root, Read read, OwnWork own_work) {
  if (b.rank() != root) {
    b.publish_buffers(root);
    b.end_round();
    b.shm_wait(root);
    return;
  }
  for_each_peer_from_next(b, [&](int q) { b.learn_buffers(q); });
  b.end_round();
  read();
  for_each_peer_from_next(b, [&](int q) { b.shm_signal(q); });
  b.end_round();
  own_work();
}
template <typename Read>
void append_root_reads_all(ScheduleBuilder& b, int root, Read read) {
  append_root_reads_all(b, root, read, [] {});
}

// The slice of a vector of `count` elements that rank q reduces: the
// elements split as evenly as they go, the first count % P ranks one more.
struct Slice {
  size_t offset, bytes;  // bytes into the vector
};
inline Slice slice_of(size_t count, size_t elem_size, int nranks, int q) {
  const size_t p = static_cast<size_t>(nranks), k = static_cast<size_t>(q);
  const size_t base = count / p, extra = count % p;
  const size_t first = k * base + std::min(k, extra);
  return {first * elem_size, (base + (k < extra ? 1 : 0)) * elem_size};
}

// Reduce-scatter by reading: after every rank published its buffers, rank
// r reduces its slice of every rank's Input in rank order into `into` (the
// slice's offset is added), a chunk (chunk_bytes_of) at a time, each peer's
// chunk read into scratch first so the reduction reads cache-warm data:
// (P-1)/P of the vector read from peers and reduced, per rank, in parallel.
// Every rank computes its slice in the same order as a flat reduction, so
// results do not depend on which rank reduced them. Then avg (finalize).
inline void append_reduce_my_slice(ScheduleBuilder& b, BufRef into) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t es = b.elem_size();
  const Slice mine = slice_of(a.count, es, p, r);
  if (mine.bytes == 0) return;
  const size_t chunk = std::max(es, chunk_bytes_of(b) / es * es);
  const BufRef landing = b.scratch(static_cast<size_t>(p) * std::min(chunk, mine.bytes));
  for (size_t off = 0; off < mine.bytes; off += chunk) {
    const size_t c = std::min(chunk, mine.bytes - off);
    // In place, the result overwrites this rank's own input as the
    // reduction goes: a copy of it first, unless it is the first operand.
    const bool copy_own = a.in_place && r > 0;
    auto operand = [&](int q) {
      return q == r && !copy_own ? input(mine.offset + off) : landing + static_cast<size_t>(q) * c;
    };
    if (copy_own) b.copy(operand(r), input(mine.offset + off), c);
    for_each_peer_from_next(b, [&](int q) { b.peer_read(q, operand(q), input(mine.offset + off), c); });
    append_reduce_in_rank_order(b, into + (mine.offset + off), c, operand);
  }
}

}  // namespace tutti::algos
