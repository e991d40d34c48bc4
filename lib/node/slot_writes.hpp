// How a rank writes its slots of the shared segment: with normal stores, or
// with non-temporal ("streaming") stores that leave the lines in memory
// instead of dirty in the writer's caches.
//
// Why it matters: a rank rewrites its slots right after its peers read
// them. When the cores are close (a shared L3) that costs little; when they
// are far apart every line must first be taken back from the far core, and
// streaming stores, which write whole lines without that, are much
// faster. Measured on this project's 2-core VMs, whose vCPUs change
// placement every few minutes (docs/PERFORMANCE.md, "The slow-state
// cliff"): a 2-rank 1 MiB allgather took 39-46 us (normal) or 76-98 us
// (streaming) with the cores close, 310 us (normal) or 56-68 us
// (streaming) with them far apart. Neither choice is right all the time.
//
// So by default (TUTTI_SHM_STREAM=auto) every rank decides for itself from
// what it sees, in probe calls: the same calls on every rank (they start
// calls through the slots in the same order, with the same layouts).
// Probes come in pairs of calls in a row: in one every rank writes its
// slots with normal stores, in the other with streaming stores (the ranks
// agree on which is which), and every rank times the whole call: its
// writes, the synchronisation and its reads of what the peers wrote the
// same way. A probe's slots sit where an ordinary call's would, so it
// costs what an ordinary call costs. The faster way is what the rank uses
// until a probe pair says otherwise. A wrong guess costs speed, never
// correctness.
// Why whole calls: until 2026-11-30 a probe timed only the rank's own
// writes, half of each copy either way. With the cores close that found
// 64-256 KiB copies 1.7-2.2x faster streamed while the call was slower
// that way (the peers then read the lines from memory, not from the
// shared cache): 2 ranks' alltoall of 128-256 KiB took 1.15-1.32 of Open
// MPI's time streamed against 0.69-0.83 with normal stores
// (docs/perf/slot-probe-margin-2026-11-30.txt). Before 2026-11-29 a probe
// timed the copy, then the same copy again (the lines in its own cache),
// and streamed where the first was 6x slower: too strict for the
// far-apart state (docs/perf/slot-probe-2026-11-29.txt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace tutti {

class SlotWrites {
 public:
  // Which calls probe. A probe's comparison holds for the other calls only
  // if its copies rewrite lines the peers read recently, so only a call
  // whose half of the segment held the same slot layout in the call before
  // (SharedPort::take_slide puts a probe where that call wrote) may probe:
  // a "valid" call. The first kEarlyProbes valid calls after an invalid one
  // probe, two pairs, as streaming takes two pairs to decide (a new message
  // size is where the state most needs checking: with probes only every 32
  // calls, short benchmark runs spent most of a size undetected, 1 MiB
  // bcasts taking 450-620 us against Open MPI's 82 in the far-apart
  // state), and then two valid calls in a row of every kProbeEvery. One
  // call of each pair writes the slow way, so probing more often costs
  // more than the state changes need.
  static constexpr uint32_t kProbeEvery = 32;
  static constexpr uint32_t kFirstProbe = 2;  // then kFirstProbe + 1
  static constexpr uint64_t kEarlyProbes = 4;
  // A probe call whose slot writes (the copies it may stream) total
  // less than this decides nothing: the two ways differ by less than the
  // calls' own jitter (a 16 KiB copy in cache takes about 0.5 us).
  static constexpr size_t kMinTimedBytes = 16 * 1024;
  // Slot copies shorter than this are never streamed: they are a few
  // lines, read while still in flight.
  static constexpr size_t kMinStreamingBytes = 4096;

  // TUTTI_SHM_STREAM: a fixed choice, or nullopt for the automatic one.
  // A fixed choice times nothing.
  void force(std::optional<bool> streaming) { forced_ = streaming; }

  // How one call through the slots runs.
  struct CallMode {
    bool probe = false;      // a probe call
    bool timed = false;      // time the whole call (note_probe_call at its end)
    bool streaming = false;  // write the slots with streaming stores
    bool moves = false;      // its slots move from call to call (the decision it follows)
  };
  // For the next call through the slots, whose slots span `area` bytes of
  // `half` (0 or 1) in `chunks` chunks; `moves`: they take turns at several
  // places (SharedPort::take_slide). Calls come in the same order with the
  // same arguments on every rank, so the ranks agree on which probe, and in
  // a probe on which way to write.
  CallMode begin_call(size_t area, uint32_t chunks, int half, bool moves) {
    Layout& last = last_layout_[half & 1];
    const bool valid = last.area == area && last.chunks == chunks;
    last = {area, chunks};
    const uint32_t phase = static_cast<uint32_t>(calls_++ % kProbeEvery);
    valid_in_a_row_ = valid ? valid_in_a_row_ + 1 : 0;
    const bool probe = valid && (valid_in_a_row_ <= kEarlyProbes || phase == kFirstProbe ||
                                 phase == kFirstProbe + 1);
    Decision& d = decision_[moves];
    if (forced_) return {probe, false, *forced_, moves};
    if (!probe) return {false, false, d.streams, moves};
    // Pairs take turns at which way goes first; the first of a pair
    // forgets what an unfinished pair left.
    const uint64_t pair = d.probes / 2;
    const bool first_of_pair = d.probes++ % 2 == 0;
    if (first_of_pair) d.normal = d.streaming = -1;
    return {true, true, first_of_pair == (pair % 2 == 1), moves};
  }

  // The probe call begun as `mode` ended: it took `seconds` on this rank,
  // and its slot writes came to `written` bytes. When both calls of a pair
  // are in (in either order: non-blocking calls may end out of order),
  // decide. Streaming takes two pairs in a row that find it faster (one can
  // be a fluke: an interrupt, a burst of other load), normal stores take
  // one (a wrong "stream" costs more in the usual, close state: 2 ranks'
  // alltoall of 128 KiB-4 MiB took 1.5-2x as long streamed). A pair that
  // timed too little decides nothing and does not break the row.
  void note_probe_call(const CallMode& mode, double seconds, size_t written) {
    if (forced_ || !mode.timed) return;
    Decision& d = decision_[mode.moves];
    if (written < kMinTimedBytes) seconds = 0;  // the pair decides nothing
    (mode.streaming ? d.streaming : d.normal) = seconds;
    if (d.normal < 0 || d.streaming < 0) return;
    if (d.normal > 0 && d.streaming > 0) {
      const bool says_stream = d.streaming < d.normal;
      d.stream_votes = says_stream ? d.stream_votes + 1 : 0;
      d.streams = d.stream_votes >= 2;
    }
    d.normal = d.streaming = -1;
  }
  // What the last probes found for calls whose slots move or stay (for
  // tests and TUTTI_DEBUG).
  bool streams(bool moves) const { return decision_[moves].streams; }

 private:
  struct Layout {
    size_t area = 0;
    uint32_t chunks = 0;
  };
  // Calls whose slots move rewrite lines the peers read up to 32 calls
  // ago, the others lines read in the call before: the two ways of
  // writing compare differently for them (2 ranks' bcast with the cores
  // close took 0.6-0.8x as long streamed at 64-256 KiB, in chunks, and
  // 1.5-1.7x as long at 512 KiB-4 MiB, in one chunk;
  // docs/perf/slot-probe-calls-2026-11-30.txt), so each kind decides apart.
  struct Decision {
    uint64_t probes = 0;  // probe calls so far (which of a pair, which way)
    int stream_votes = 0;  // pairs in a row that found streaming faster
    bool streams = false;
    // Seconds the current pair's calls took each way; -1 until it ended,
    // 0 where it timed too little.
    double normal = -1, streaming = -1;
  };
  std::optional<bool> forced_;
  uint64_t calls_ = 0;
  Layout last_layout_[2];  // per half, that of the last call through it
  uint64_t valid_in_a_row_ = 0;  // calls in a row that could probe
  Decision decision_[2];  // [moves]
};

}  // namespace tutti
