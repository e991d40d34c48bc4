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
// calls through the slots in the same order, with the same layouts; the
// probes' slot places depend on it). In a probe a rank copies half of
// each large copy into its own slot with normal stores and the other half
// with streaming stores, timing each: both meet lines the peers read in
// the call before, as every call's writes do, and the faster way is what
// the rank uses until a probe says otherwise. The test needs only the
// rank's own writes, so it works for every rank that writes its slot: a
// bcast's root, an allreduce's ranks, alike. A wrong guess costs speed,
// never correctness.
// Until 2026-11-29 a probe timed the copy, then the same copy again (the
// lines in its own cache), and streamed where the first was 6x slower:
// on that day's VM the far-apart state gave only 1.9-6.3x (2-4 MiB bcasts
// on 2 ranks), so the ranks kept normal stores at 2.3-2.9x Open MPI's
// time, where streaming took 0.7-0.8x (docs/perf/slot-probe-2026-11-29.txt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace tutti {

class SlotWrites {
 public:
  // Which calls probe. A probe's comparison holds for the other calls only
  // if its copies rewrite lines the peers read recently, so only a call whose half
  // of the segment held the same slot layout in the call before
  // (SharedPort::take_slide puts a probe where that call wrote) may probe:
  // a "valid" call. The first two valid calls after an invalid one probe
  // (a new message size is where the state most needs checking: with
  // probes only every 32 calls, short benchmark runs spent most of a size
  // undetected, 1 MiB bcasts taking 450-620 us against Open MPI's 82 in
  // the far-apart state), and then two valid calls in a row of every
  // kProbeEvery. A probe writes half its bytes the slow way, so probing
  // more often costs more than the state changes need.
  static constexpr uint32_t kProbeEvery = 32;
  static constexpr uint32_t kFirstProbe = 2;  // then kFirstProbe + 1
  // Copies shorter than this are not timed (the clock would dominate:
  // reading it costs about 20 ns, a 16 KiB copy in cache about 500).
  static constexpr size_t kMinTimedBytes = 16 * 1024;
  // Slot copies shorter than this are never streamed: they are a few
  // lines, read while still in flight.
  static constexpr size_t kMinStreamingBytes = 4096;

  // TUTTI_SHM_STREAM: a fixed choice, or nullopt for the automatic one.
  // A fixed choice still takes the probes' places (below), so that ranks
  // whose settings differ still agree on where every call's slots are.
  void force(std::optional<bool> streaming) { forced_ = streaming; }

  // How one call through the slots runs.
  struct CallMode {
    bool probe = false;      // a probe call: its slots go where the last call's were
    bool timed = false;      // time both ways of writing the rank's own slot
    bool streaming = false;  // write the slots with streaming stores
  };
  // For the next call through the slots, whose slots span `area` bytes of
  // `half` (0 or 1) in `chunks` chunks. Calls come in the same order with
  // the same arguments on every rank, so the ranks agree on which probe.
  CallMode begin_call(size_t area, uint32_t chunks, int half) {
    Layout& last = last_layout_[half & 1];
    const bool valid = last.area == area && last.chunks == chunks;
    last = {area, chunks};
    const uint32_t phase = static_cast<uint32_t>(calls_++ % kProbeEvery);
    valid_in_a_row_ = valid ? valid_in_a_row_ + 1 : 0;
    const bool probe = valid && (valid_in_a_row_ <= 2 || phase == kFirstProbe ||
                                 phase == kFirstProbe + 1);
    if (forced_) return {probe, false, *forced_};
    return {probe, probe, !probe && streams_};
  }

  // In a probe call: half of a copy into the rank's own slot took
  // `normal` seconds with normal stores, the other half `streaming` with
  // streaming stores.
  void note_probe_copy(double normal, double streaming) {
    normal_ += normal;
    streaming_ += streaming;
  }
  // The probe call ended: decide, if it timed a copy. Streaming takes two
  // probes in a row that find it faster (one can be a fluke: an
  // interrupt, a burst of other load), normal stores take one (a wrong
  // "stream" costs more in the usual, close state: measured there 2x
  // slower). Probes that timed nothing do not break the row.
  void end_probe() {
    if (normal_ > 0 && streaming_ > 0) {
      const bool says_stream = streaming_ < normal_;
      stream_votes_ = says_stream ? stream_votes_ + 1 : 0;
      streams_ = stream_votes_ >= 2;
    }
    normal_ = streaming_ = 0;
  }
  // What the last probes found (for tests and TUTTI_DEBUG).
  bool streams() const { return streams_; }

 private:
  struct Layout {
    size_t area = 0;
    uint32_t chunks = 0;
  };
  std::optional<bool> forced_;
  uint64_t calls_ = 0;
  Layout last_layout_[2];  // per half, that of the last call through it
  uint64_t valid_in_a_row_ = 0;  // calls in a row that could probe
  int stream_votes_ = 0;  // probes in a row that found streaming faster
  bool streams_ = false;
  double normal_ = 0, streaming_ = 0;  // seconds, this probe's timed halves
};

}  // namespace tutti
