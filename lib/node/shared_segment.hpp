// Memory shared by the ranks of one node, for the shared-memory algorithms
// (lib/algos/*_shm.cpp): a data area every rank addresses by the same
// offsets, and flags for synchronisation that costs a cache-line transfer
// instead of a message.
//
// Each ordered pair of ranks (to, from) has G = signal_groups(nranks, shared_cores)
// groups of flag lines, written only by `from`: the n-th signal from `from`
// to `to` goes to group n % G. It may carry data (small collectives send
// their whole vector this way, so it arrives with the flag): up to
// kLinePayload bytes in each line of the group, as many lines as the data
// needs (at least one, at most carry_lines(nranks)). Each line gets its
// share of the data, then n in its counter (release). `to`'s n-th wait for
// `from` returns once the counters of all those lines reach n (acquire):
// everything `from` wrote before signalling is visible, the data included.
// Every line carries its own counter (as in NCCL's LL protocols) so that
// the receiver polls all of them at once: the lines come over in parallel,
// in one transfer's time, instead of a flag first and then the data.
//
// Group n % G is written again by signal n + G, so `to` acknowledges: after
// copying out signal n's data it stores n in its acknowledgement counter
// for `from`, and `from` sends signal n + G only once it knows `to` took
// signal n. A sender can thus run up to G signals ahead of a receiver,
// which lets one-way schedules (a small bcast or reduce, where only the
// root or only the others signal) return without waiting for a reply, and
// lets back-to-back one-way calls overlap the acknowledgements' round trip
// (G of them per round trip).
// Every signal also carries, in its first line, how many of the receiver's
// signals the sender has taken: in schedules where ranks signal each other
// (allreduce, barrier) that news arrives with the flags, and the sender
// never has to read the acknowledgement counter, a line the other rank
// keeps writing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "node/slot_writes.hpp"

namespace tutti {

class SharedSegment {
 public:
  static constexpr size_t kCacheLine = 64;
  // Data one flag line carries, after its counter and (first line of a
  // signal only) the count of the receiver's signals the sender has taken.
  static constexpr size_t kLinePayload = kCacheLine - 2 * sizeof(uint64_t);
  // Up to this many ranks, a signal may fill kWideCarryLines lines (384
  // bytes); on more, one line (the lines grow with the square of the
  // ranks: 512 KiB at 16, with 4 signal groups). Measured on 2 ranks
  // (docs/PERFORMANCE.md, "Small vectors in the flag lines"): 64-312 byte
  // allreduces take 0.6-0.85 of their time through the slots; at 512 bytes
  // it is even, and at 1 KiB (22 lines) 1.5x slower, so the lines stop at
  // 384 bytes.
  static constexpr int kWideCarryMaxRanks = 16;
  static constexpr size_t kWideCarryLines = 8;
  static size_t carry_lines(int nranks) {
    return nranks <= kWideCarryMaxRanks ? kWideCarryLines : 1;
  }
  // Signals a sender may run ahead of its receiver: 4 on up to
  // kWideCarryMaxRanks ranks, 16 there where ranks share cores (more ranks
  // than CPUs, or ranks told to yield: Comm::ranks_wait_for_cores), else 2
  // (the lines grow with the square of the ranks). Why 4: with the cores
  // far apart (a 0.5 us round trip), back-to-back small bcasts and reduces
  // took 0.28-0.30 us per call against Open MPI's 0.15-0.27; with 4 groups
  // and the receiver asking for the next signal's lines early (take),
  // 0.16-0.18. Either alone did not help (docs/PERFORMANCE.md, "Four
  // signals in flight, and the next one asked for early"). Why 16 where
  // ranks share cores: a root that runs ahead waits for a descheduled
  // reader less often. 4 ranks on 2 cores, back to back, 8-64 B, 5 rounds
  // of alternating jobs: bcast, reduce, gather, scatter 0.48-0.77 of Open
  // MPI's time against 0.65-1.09 with 4 (a scatter job with 4 took 3.2 us
  // a call, one stall of a descheduled reader after another). Not
  // everywhere: on 2 ranks with a core each, 16 made allreduce 5-10%
  // slower (docs/perf/flag-groups-shared-cores-2026-11-28.txt).
  static constexpr int kWideSignalGroups = 4;
  static constexpr int kSharedCoresSignalGroups = 16;
  static int signal_groups(int nranks, bool shared_cores = false) {
    if (nranks > kWideCarryMaxRanks) return 2;
    return shared_cores ? kSharedCoresSignalGroups : kWideSignalGroups;
  }
  // The most data one signal carries on `nranks` ranks.
  static size_t carry_bytes(int nranks) { return carry_lines(nranks) * kLinePayload; }
  // Lines a signal carrying `bytes` fills.
  static size_t lines_for(size_t bytes) {
    return bytes <= kLinePayload ? 1 : (bytes + kLinePayload - 1) / kLinePayload;
  }

  // Bytes needed for the flags and acknowledgements of `nranks` ranks with
  // `groups` signal groups (the data area follows).
  static size_t flag_bytes(int nranks, int groups) {
    return pair_lines_bytes(nranks, groups) + static_cast<size_t>(nranks) * ack_row_bytes(nranks);
  }
  static size_t flag_bytes(int nranks) { return flag_bytes(nranks, signal_groups(nranks)); }

  // A view over `total_bytes` of zero-initialised shared memory at `base`,
  // with `groups` signal groups (signal_groups: every rank of the segment
  // must use the same).
  SharedSegment(void* base, size_t total_bytes, int nranks, int groups)
      : base_(static_cast<char*>(base)), total_(total_bytes), nranks_(nranks),
        carry_lines_(carry_lines(nranks)), groups_(static_cast<uint64_t>(groups)) {}
  SharedSegment(void* base, size_t total_bytes, int nranks)
      : SharedSegment(base, total_bytes, nranks, signal_groups(nranks)) {}

  char* data() const { return base_ + flag_bytes(nranks_, static_cast<int>(groups_)); }
  size_t data_bytes() const {
    const size_t flags = flag_bytes(nranks_, static_cast<int>(groups_));
    return total_ > flags ? total_ - flags : 0;
  }
  int nranks() const { return nranks_; }
  uint64_t groups() const { return groups_; }

  // Line `k` of the n-th signal from `from` to `to`.
  char* line(int to, int from, uint64_t n, size_t k = 0) const {
    const size_t pair = static_cast<size_t>(to) * static_cast<size_t>(nranks_) + static_cast<size_t>(from);
    return base_ + ((pair * groups_ + (n & (groups_ - 1))) * carry_lines_ + k) * kCacheLine;
  }
  static std::atomic_ref<uint64_t> counter(char* line) {
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(line));
  }
  // Written before the counter's release store, read after its acquire
  // load: plain memory.
  static char* taken_word(char* line) { return line + sizeof(uint64_t); }
  static char* payload(char* line) { return line + 2 * sizeof(uint64_t); }
  // How many signals from `from` rank `to` has taken. Each rank writes its
  // own row of these (a row per rank, padded to whole lines, so no two
  // writers share a line).
  std::atomic_ref<uint64_t> ack(int to, int from) const {
    char* row = base_ + pair_lines_bytes(nranks_, static_cast<int>(groups_)) +
                static_cast<size_t>(to) * ack_row_bytes(nranks_);
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(row + static_cast<size_t>(from) * sizeof(uint64_t)));
  }

 private:
  static size_t pair_lines_bytes(int nranks, int groups) {
    return static_cast<size_t>(nranks) * static_cast<size_t>(nranks) *
           static_cast<size_t>(groups) * carry_lines(nranks) * kCacheLine;
  }
  static size_t ack_row_bytes(int nranks) {
    return (static_cast<size_t>(nranks) * sizeof(uint64_t) + kCacheLine - 1) / kCacheLine * kCacheLine;
  }

  char* base_;
  size_t total_;
  int nranks_;
  size_t carry_lines_;
  uint64_t groups_;  // a signal_groups value, a power of two
};

// The data area is split in two halves, the "parities". Chunk k of the
// communicator's sequence of shared-memory chunks (counted across
// collectives) is staged in half k % 2. Every chunk is: write own slots;
// full synchronisation; read the peers' slots. So when a rank writes chunk
// k+2, every peer has signalled in chunk k+1, after reading chunk k: no
// collective needs a closing synchronisation to make the segment reusable.
inline size_t shared_half_bytes(size_t data_bytes) { return data_bytes / 2 / 64 * 64; }

// One rank's side of a segment: how many signals it sent to, and waited
// for from, each peer, and the parity the next chunk uses (these continue
// across collectives).
class SharedPort {
 public:
  SharedPort(SharedSegment* segment, int rank)
      : segment_(segment), rank_(rank),
        sent_(static_cast<size_t>(segment->nranks()), 0),
        waited_(static_cast<size_t>(segment->nranks()), 0),
        acked_(static_cast<size_t>(segment->nranks()), 0) {}

  SharedSegment& segment() const { return *segment_; }
  // Schedules name communicator ranks. In a job across nodes the segment
  // serves the communicator's ranks on this node, by their index among
  // them: `index_of_rank` maps every communicator rank to its index among
  // the ranks of its own node (Topology's NodeIndex::local_of_rank); only
  // this node's ranks are ever looked up. Without it, the segment serves
  // the whole communicator.
  void use_rank_index(std::vector<int> index_of_rank) { index_of_rank_ = std::move(index_of_rank); }
  int index_of(int comm_rank) const {
    return index_of_rank_.empty() ? comm_rank : index_of_rank_[static_cast<size_t>(comm_rank)];
  }
  // How this rank writes its slots (normal or streaming stores), decided
  // per call (node/slot_writes.hpp).
  SlotWrites& slot_writes() { return slot_writes_; }
  size_t half_bytes() const { return shared_half_bytes(segment_->data_bytes()); }
  // For a schedule of `chunks` chunks, built as if its first chunk were
  // parity 0: whether its halves must be swapped, because the sequence is at
  // parity 1. Called in collective order, the same on every rank.
  bool take_parity(uint32_t chunks) {
    const bool swap = next_parity_ != 0;
    next_parity_ ^= chunks & 1;
    return swap;
  }
  // How many places consecutive calls of `chunks` chunks whose slots span
  // `area` bytes take in turn in a half (take_slide): 1 for calls that do
  // not move.
  size_t slide_places(size_t area, uint32_t chunks) const {
    if (area == 0 || chunks != 1) return 1;
    return std::max<size_t>(1, std::min(kSlideRegions, half_bytes() / slide_step(area)));
  }
  // Where in each half the slots of the next call through them start, for
  // a call of `chunks` chunks whose slots span `area` bytes of `half`.
  // Consecutive one-chunk calls take up to kSlideRegions disjoint places in
  // turn. Why: rewriting lines that a peer read in the call just before
  // costs far more than writing lines it read longer ago (measured:
  // docs/PERFORMANCE.md, "Slots that move from call to call"). Calls of
  // several chunks stay at the start: they lost 10-15% when moved (1-4 MiB
  // allgather and alltoall, 2 ranks). Probe calls (node/slot_writes.hpp)
  // move like the others: they time what an ordinary call costs. Safe
  // wherever the slots are: the parities keep a full synchronisation
  // between any two calls that use the same half. Called in collective
  // order with the same arguments on every rank.
  size_t take_slide(size_t area, uint32_t chunks) {
    return take_slide_among(slide_places(area, chunks), area);
  }
  // Everything a call through the slots takes from the port, in the one
  // order every path must follow (the engine's ScheduleRun and the direct
  // runs), for a schedule of `chunks` chunks whose slots span `area` bytes:
  // whether its halves swap (take_parity), how its slot writes run
  // (SlotWrites::begin_call) and where in the half its slots start
  // (take_slide).
  struct SlotCall {
    bool swap_halves = false;
    SlotWrites::CallMode mode;
    size_t slide = 0;
  };
  SlotCall begin_slot_call(size_t area, uint32_t chunks) {
    SlotCall call;
    call.swap_halves = take_parity(chunks);
    const int half = call.swap_halves ? 1 : 0;
    const size_t places = slide_places(area, chunks);
    call.mode = slot_writes_.begin_call(area, chunks, half, places > 1);
    call.slide = take_slide_among(places, area);
    return call;
  }
  // Whether the next signal to `peer` may be sent: `peer` took the signal
  // that last used its line. Reads the peer's acknowledgement only when
  // what is known of it does not suffice.
  bool can_signal(int peer) {
    const uint64_t next = sent_[peer] + 1, groups = segment_->groups();
    const uint64_t needed = next > groups ? next - groups : 0;
    if (acked_[peer] >= needed) return true;
    acked_[peer] = segment_->ack(peer, rank_).load(std::memory_order_acquire);
    return acked_[peer] >= needed;
  }
  // Signals `peer`, carrying `bytes` (at most carry_bytes) from `data`;
  // only once can_signal(peer).
  void signal(int peer, const void* data = nullptr, size_t bytes = 0) {
    const uint64_t n = ++sent_[peer];
    const char* from = static_cast<const char*>(data);
    const size_t lines = SharedSegment::lines_for(bytes);
    for (size_t k = 0; k < lines; ++k) {
      char* line = segment_->line(peer, rank_, n, k);
      if (k == 0) std::memcpy(SharedSegment::taken_word(line), &waited_[peer], sizeof(uint64_t));
      const size_t at = k * SharedSegment::kLinePayload;
      if (at < bytes) copy_payload(SharedSegment::payload(line), from + at, bytes - at);
      SharedSegment::counter(line).store(n, std::memory_order_release);
    }
  }
  // Whether `peer`'s next signal to this rank (the one the next wait is
  // for), carrying `bytes`, has arrived. Reads every line's counter, even
  // after one that is not there yet, so that all of them are on their way.
  bool arrived(int peer, size_t bytes = 0) const {
    const uint64_t n = waited_[peer] + 1;
    const size_t lines = SharedSegment::lines_for(bytes);
    bool all = true;
    for (size_t k = 0; k < lines; ++k)
      all &= SharedSegment::counter(segment_->line(rank_, peer, n, k)).load(std::memory_order_acquire) >= n;
    return all;
  }
  // Completes the wait for the signal that arrived(peer, bytes): copies the
  // `bytes` it carried to `dst`, then acknowledges it (its lines are free).
  void take(int peer, void* dst = nullptr, size_t bytes = 0) {
    const uint64_t n = ++waited_[peer];
    char* first = segment_->line(rank_, peer, n);
    uint64_t peer_took = 0;
    std::memcpy(&peer_took, SharedSegment::taken_word(first), sizeof(uint64_t));
    acked_[peer] = std::max(acked_[peer], peer_took);
    char* to = static_cast<char*>(dst);
    for (size_t at = 0, k = 0; at < bytes; at += SharedSegment::kLinePayload, ++k)
      copy_payload(to + at, SharedSegment::payload(segment_->line(rank_, peer, n, k)), bytes - at);
    segment_->ack(rank_, peer).store(n, std::memory_order_release);
    // Ask for the lines of the next signal now: a sender running ahead
    // (one-way calls back to back) has often written them already, and
    // their transfer then overlaps the rest of this call instead of
    // starting at the next wait. Measured with the cores far apart
    // (docs/PERFORMANCE.md, "Four signals in flight, and the next one asked
    // for early"): back-to-back 8-byte bcasts 0.27 -> 0.16 us.
    for (size_t k = 0, lines = SharedSegment::lines_for(bytes); k < lines; ++k)
      __builtin_prefetch(segment_->line(rank_, peer, n + 1, k));
  }

 private:
  // Copies one line's share of `left` bytes still to go: a whole payload
  // as a fixed-size copy the compiler inlines, only a last partial line
  // through memcpy's variable-size path. Why: a 256-byte signal fills 6
  // lines, and 12 calls of libc's memcpy (6 at each end) cost about as
  // much as the cache-line transfers themselves.
  static void copy_payload(void* dst, const void* src, size_t left) {
    if (left >= SharedSegment::kLinePayload)
      std::memcpy(dst, src, SharedSegment::kLinePayload);
    else
      std::memcpy(dst, src, left);
  }

  SharedSegment* segment_;
  int rank_;
  std::vector<int> index_of_rank_;  // empty: the identity
  std::vector<uint64_t> sent_, waited_;
  std::vector<uint64_t> acked_;  // the peers' acknowledgements, as last read
  uint32_t next_parity_ = 0;
  uint64_t slides_ = 0;  // one-chunk calls through the slots so far (take_slide)
  static constexpr size_t kSlideAlign = 4096;
  static size_t slide_step(size_t area) { return (area + kSlideAlign - 1) / kSlideAlign * kSlideAlign; }
  // take_slide, for `places` = slide_places(area, chunks).
  size_t take_slide_among(size_t places, size_t area) {
    if (places == 1) return 0;
    return (slides_++ % places) * slide_step(area);
  }
  // 32 measured best of 8, 32 and no limit (2 ranks, 16 KiB-4 MiB): no
  // limit made 16 KiB calls 3x slower (their slots then cycle through the
  // whole half, out of the caches).
  static constexpr size_t kSlideRegions = 32;
  SlotWrites slot_writes_;
};

}  // namespace tutti
