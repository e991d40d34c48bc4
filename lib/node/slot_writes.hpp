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
// costs what an ordinary call costs. The rank uses the way whose best call
// of the last two pairs was the faster (note_probe_call). A wrong guess
// costs speed, never correctness.
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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace tutti {

class SlotWrites {
 public:
  // Which calls probe. A probe stands for the calls around it only if it
  // repeats them, so only a call whose half of the segment held the same
  // slot layout in the call before may probe: a "valid" call. The first
  // kEarlyProbes valid calls after an invalid one probe, two pairs, so that
  // a new size's decision rests on two (a new message size is where the
  // state most needs checking: with probes only every 32 calls, short
  // benchmark runs spent most of a size undetected, 1 MiB bcasts taking
  // 450-620 us against Open MPI's 82 in the far-apart state). Then pairs
  // of valid calls in a row probe again: the first at valid call
  // kEarlyProbes + kProbeEvery - 1, each later one twice as many calls
  // after the one before (at most kMaxProbeGap), until an invalid call
  // starts it all over.
  // Why it grows: one call of each pair writes the slow way, at up to 5x
  // the other's time (2 ranks' 1 MiB allgather with the cores far apart:
  // 330 us with normal stores, 60 streamed), so a pair every 32 calls cost
  // a loop of such calls about 14%; the cores change state every few
  // minutes, and a gap of 256 calls still notices within two pairs, a few
  // ms to a few s of calls (docs/perf/slot-probe-gap-2026-11-30.txt).
  // Everything here follows from the sequence of calls, which every rank
  // sees alike, so the ranks probe in the same calls.
  static constexpr uint64_t kProbeEvery = 32;
  static constexpr uint64_t kMaxProbeGap = 256;
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
    bool timed = false;      // a probe call: time it whole (note_probe_call at its end)
    bool streaming = false;  // write the slots with streaming stores
    bool moves = false;      // its slots move from call to call (the verdict it follows)
    size_t area = 0;         // its slots' layout (begin_call)
    uint32_t chunks = 0;
  };
  // For the next call through the slots, whose slots span `area` bytes of
  // `half` (0 or 1) in `chunks` chunks; `moves`: they take turns at several
  // places (SharedPort::take_slide). Calls come in the same order with the
  // same arguments on every rank, so the ranks agree on which probe, and in
  // a probe on which way to write.
  CallMode begin_call(size_t area, uint32_t chunks, int half, bool moves) {
    const Layout layout{area, chunks};
    Layout& last = last_layout_[half & 1];
    const bool valid = last == layout;
    last = layout;
    valid_in_a_row_ = valid ? valid_in_a_row_ + 1 : 0;
    if (!valid) {
      probe_gap_ = kProbeEvery;
      next_probe_ = kEarlyProbes + kProbeEvery - 1;
    }
    const uint64_t n = valid_in_a_row_;
    const bool probe = valid && (n <= kEarlyProbes || n == next_probe_ || n == next_probe_ + 1);
    if (n == next_probe_ + 1) {  // the pair's second call: place the next pair
      probe_gap_ = std::min(2 * probe_gap_, kMaxProbeGap);
      next_probe_ += probe_gap_;
    }
    Kind& kind = kinds_[moves];
    CallMode mode{false, kind.streams, moves, area, chunks};
    if (forced_) {  // times nothing
      mode.streaming = *forced_;
      return mode;
    }
    Verdict* v = kind.find(layout);
    if (!probe) {
      if (v) mode.streaming = v->streams;
      return mode;
    }
    // A probe pairs with the next probe of its layout (two sizes in turn,
    // one in each half, probe in turn). The pairs take turns at which way
    // goes first; the first of a pair forgets what an unfinished one left.
    if (!v) v = kind.replace_oldest(layout);
    v->used = ++kind.uses;
    mode.timed = true;
    if (!v->awaiting_second) {
      v->awaiting_second = true;
      v->first_streams = v->pairs_begun++ % 2 == 1;
      v->normal = v->streaming = -1;
      mode.streaming = v->first_streams;
    } else {
      v->awaiting_second = false;
      mode.streaming = !v->first_streams;
    }
    return mode;
  }

  // The probe call begun as `mode` ended: it took `seconds` on this rank,
  // and its slot writes came to `written` bytes. When both calls of a pair
  // are in (in either order: non-blocking calls may end out of order),
  // decide: stream where the best streamed call of the layout's last two
  // pairs was faster than its best call with normal stores. The best of
  // two, because a call can be slow by a fluke (an interrupt, a burst of
  // other load: a 0.08 ms call took 2.5 ms once, and one such pair turned
  // 2 ranks' 1 MiB alltoallv to normal stores at 5x Open MPI's time); so
  // one pair can turn a verdict only where the pair before agreed with it,
  // and a change of the cores' state turns it within two pairs. A pair
  // that timed too little decides nothing.
  void note_probe_call(const CallMode& mode, double seconds, size_t written) {
    if (forced_ || !mode.timed) return;
    Kind& kind = kinds_[mode.moves];
    Verdict* v = kind.find({mode.area, mode.chunks});
    if (!v) return;  // replaced meanwhile by other layouts' probes
    if (written < kMinTimedBytes) seconds = 0;  // the pair decides nothing
    (mode.streaming ? v->streaming : v->normal) = seconds;
    if (v->normal < 0 || v->streaming < 0) return;
    if (v->normal > 0 && v->streaming > 0) {
      v->last[1] = v->last[0];
      v->last[0] = {v->normal, v->streaming};
      v->pairs = std::min(v->pairs + 1, 2);
      Pair best = v->last[0];
      if (v->pairs == 2) {
        best.normal = std::min(best.normal, v->last[1].normal);
        best.streaming = std::min(best.streaming, v->last[1].streaming);
      }
      v->streams = kind.streams = best.streaming < best.normal;
    }
    v->normal = v->streaming = -1;
  }
  // What the last probes found for calls whose slots move or stay (for
  // tests and TUTTI_DEBUG).
  bool streams(bool moves) const { return kinds_[moves].streams; }

 private:
  struct Layout {
    size_t area = 0;
    uint32_t chunks = 0;
    bool operator==(const Layout& o) const { return area == o.area && chunks == o.chunks; }
  };
  struct Pair {
    double normal = 0, streaming = 0;  // seconds
  };
  // What the probes of one layout found.
  struct Verdict {
    Layout layout;
    uint64_t used = 0;  // when its last probe began (Kind::uses)
    bool streams = false;
    uint64_t pairs_begun = 0;  // which way goes first
    bool awaiting_second = false;
    bool first_streams = false;  // the way of the current pair's first call
    // The current pair: seconds each way, -1 until its call ended, 0 where
    // it timed too little.
    double normal = -1, streaming = -1;
    Pair last[2];  // the last two pairs that counted, the newest first
    int pairs = 0;  // how many of `last` hold one
  };
  // Calls whose slots move rewrite lines the peers read up to 32 calls
  // ago, the others lines read in the call before: the two ways of
  // writing compare differently for them (2 ranks' bcast with the cores
  // close took 0.6-0.8x as long streamed at 64-256 KiB, in chunks, and
  // 1.5-1.7x as long at 512 KiB-4 MiB, in one chunk;
  // docs/perf/slot-probe-calls-2026-11-30.txt), so each kind decides
  // apart, per layout (the two it probed last), and a layout it has no
  // verdict for follows its latest one.
  struct Kind {
    Verdict verdicts[2];
    uint64_t uses = 0;
    bool streams = false;  // the latest verdict
    Verdict* find(const Layout& layout) {
      for (Verdict& v : verdicts)
        if (v.used > 0 && v.layout == layout) return &v;
      return nullptr;
    }
    Verdict* replace_oldest(const Layout& layout) {
      Verdict& v = verdicts[0].used <= verdicts[1].used ? verdicts[0] : verdicts[1];
      v = Verdict{};
      v.layout = layout;
      v.streams = streams;
      return &v;
    }
  };
  std::optional<bool> forced_;
  Layout last_layout_[2];  // per half, that of the last call through it
  uint64_t valid_in_a_row_ = 0;  // calls in a row that could probe
  // The valid call (counted as valid_in_a_row_) where the next pair after
  // the early probes begins, and the calls from it to the pair after.
  uint64_t next_probe_ = kEarlyProbes + kProbeEvery - 1;
  uint64_t probe_gap_ = kProbeEvery;
  Kind kinds_[2];  // [moves]
};

}  // namespace tutti
