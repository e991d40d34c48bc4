// Building blocks of the shared-memory algorithms (*_shm.cpp). They run on
// single-node communicators through the node's shared segment (see
// node/shared_segment.hpp and the contract in engine/schedule.hpp). The segment's data
// area has two halves ("parities"); in each half every rank owns
// `per_rank` slots. Every chunk of a collective is: the rank writes its
// slots of the chunk's parity (ScheduleBuilder::begin_shm_chunk), a full
// synchronisation, then it reads the peers' slots. Parities alternate
// across chunks and across collectives, which makes the next chunk's (or
// the next collective's) writes safe without a closing synchronisation:
// chunk k+2 reuses chunk k's slots only after the full synchronisation of
// chunk k+1, which every rank reaches after reading chunk k.
#pragma once

#include <algorithm>

#include "algos/registry.hpp"
#include "algos/ring.hpp"
#include "base/status.hpp"
#include "engine/schedule.hpp"
#include "node/shared_segment.hpp"

namespace tutti::algos {

// Smallest useful slot; below it the per-chunk synchronisation dominates.
inline constexpr size_t kMinShmSlot = 64;

// The slot size for `slots_per_rank` slots per rank per parity (alltoall and
// reduce_scatter stage one piece per peer): the chunk size asked for
// (params.chunk_bytes, default 256 KiB), capped by what half the segment
// holds, rounded down to 64 bytes (a multiple of every element size).
inline size_t shm_slot_bytes(size_t capacity, int nranks, size_t chunk_bytes, size_t slots_per_rank) {
  const size_t most = shared_half_bytes(capacity) / (static_cast<size_t>(nranks) * slots_per_rank);
  return std::min(chunk_bytes, most) / kMinShmSlot * kMinShmSlot;
}

inline Refusal refuse_shm(const CollArgs& a, const Topology& topo, size_t slots_per_rank) {
  if (topo.nnodes != 1) return "needs all ranks on one node";
  // No refusal of device memory: the memory kinds of one call may differ
  // between ranks (a device receive buffer only at a reduce's root), so a
  // refusal here would split the ranks between algorithms. A call on device
  // buffers runs a shared-memory schedule on host copies (Comm::launch).
  if (topo.shared_bytes == 0) return "no shared-memory segment (TUTTI_SHM_BYTES=0 or unavailable)";
  const size_t chunk = a.params.chunk_bytes ? a.params.chunk_bytes : kDefaultChunkBytes;
  if (shm_slot_bytes(topo.shared_bytes, topo.nranks, chunk, slots_per_rank) < kMinShmSlot)
    return str("the shared segment (", topo.shared_bytes, " bytes) is too small for ",
               topo.nranks, " ranks");
  return std::nullopt;
}

struct ShmSlots {
  size_t slot;  // bytes of one slot
  size_t half;  // bytes of one parity's half of the segment
  size_t per_rank = 1;  // slots a rank owns per parity
  // Slot `index` (< per_rank) of `rank` for chunk parity `parity`.
  BufRef at(int parity, int rank, size_t index = 0) const {
    return shared(static_cast<size_t>(parity) * half +
                  (static_cast<size_t>(rank) * per_rank + index) * slot);
  }
};

// `most_per_slot`: the most any slot of this call holds (a call smaller
// than a chunk gets slots just its size, so the slots of consecutive calls
// can sit apart: SharedPort::take_slide); `chunk_bytes`: the most a slot
// holds (shm_slots: what the call's tuning asks, params.chunk_bytes).
inline ShmSlots shm_slots_of(ScheduleBuilder& b, size_t per_rank, size_t most_per_slot,
                             size_t chunk_bytes) {
  const size_t fit = (most_per_slot + kMinShmSlot - 1) / kMinShmSlot * kMinShmSlot;
  const size_t slot =
      std::min(shm_slot_bytes(b.shared_capacity(), b.nranks(), chunk_bytes, per_rank), fit);
  b.note_slot_area(static_cast<size_t>(b.nranks()) * per_rank * slot);
  return {slot, shared_half_bytes(b.shared_capacity()), per_rank};
}

inline ShmSlots shm_slots(ScheduleBuilder& b, size_t per_rank, size_t most_per_slot) {
  return shm_slots_of(b, per_rank, most_per_slot, chunk_bytes_of(b));
}

// Small calls skip the slots: their data rides in the flag lines (up to
// SharedSegment::carry_bytes per signal: 384 bytes on up to 16 ranks), so
// it arrives with the flags, in one round of flags and one transfer's time
// instead of two (flag, then slot).
inline bool shm_fits_inline(size_t bytes, int nranks) {
  return bytes <= SharedSegment::carry_bytes(nranks);
}

// What a signal carries (bytes 0: nothing), or where a wait puts it.
struct ShmCarry {
  BufRef ref;
  size_t bytes = 0;
};

// One round in which every rank tells every other that its earlier steps
// are done, and waits to hear the same from all of them. The signal to q
// carries send(q), the wait for q lands recv(q) (at most carry_bytes).
template <typename Send, typename Recv>
void append_shm_exchange(ScheduleBuilder& b, Send send, Recv recv) {
  for (int q = 0; q < b.nranks(); ++q)
    if (q != b.rank()) {
      const ShmCarry c = send(q);
      b.shm_signal(q, c.ref, c.bytes);
    }
  for (int q = 0; q < b.nranks(); ++q)
    if (q != b.rank()) {
      const ShmCarry c = recv(q);
      b.shm_wait(q, c.ref, c.bytes);
    }
  b.end_round();
}

// In the round being built (the caller ends it): tells each of `peers`
// (communicator ranks of this node; this rank, if listed, is skipped) that
// this rank's earlier steps are done, and waits to hear the same from each.
inline void append_signal_then_wait(ScheduleBuilder& b, const std::vector<int>& peers) {
  for (int q : peers)
    if (q != b.comm_rank()) b.shm_signal(q);
  for (int q : peers)
    if (q != b.comm_rank()) b.shm_wait(q);
}

inline void append_shm_sync_all(ScheduleBuilder& b) {
  const auto nothing = [](int) { return ShmCarry{}; };
  append_shm_exchange(b, nothing, nothing);
}

// dst = operand(0) op operand(1) op ... op operand(P-1), in rank order so
// every rank computes bitwise the same result; then avg.
template <typename Operand>
void append_reduce_in_rank_order(ScheduleBuilder& b, BufRef dst, size_t bytes, Operand operand) {
  b.reduce(dst, operand(0), operand(1), bytes);
  for (int q = 2; q < b.nranks(); ++q) b.reduce(dst, dst, operand(q), bytes);
  b.finalize(dst, bytes);
}

// A reduction small enough for the flag lines (each rank's share at most
// carry_bytes): every rank sends each peer q `bytes` from `from(q)` (an
// Input reference) in its flag lines; the P shares land in scratch by rank,
// this rank's own copied first (so that in place the output may be written
// while the input is still read), and are reduced in rank order into the
// output, then avg. allreduce sends every peer its whole vector,
// reduce_scatter each peer that peer's block.
template <typename From>
void append_inline_reduction(ScheduleBuilder& b, size_t bytes, From from) {
  const BufRef values = b.scratch(static_cast<size_t>(b.nranks()) * bytes);
  auto value = [&](int q) { return values + static_cast<size_t>(q) * bytes; };
  b.copy(value(b.rank()), from(b.rank()), bytes);
  append_shm_exchange(
      b, [&](int q) { return ShmCarry{from(q), bytes}; },
      [&](int q) { return ShmCarry{value(q), bytes}; });
  append_reduce_in_rank_order(b, output(), bytes, value);
}

}  // namespace tutti::algos
