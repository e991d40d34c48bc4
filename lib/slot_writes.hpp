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
// what it sees. Every kProbeEvery-th call through the slots (from the
// third, when both halves of the segment have been touched) is a probe,
// the same calls on every rank (they start such calls in the same order).
// In a probe everybody writes with normal stores, and a rank times its
// large copies into its own slot and its large reads of the peers' slots.
// When the cores are far apart the copies in are the slow part, not the
// reads (measured): the rank then streams its writes until a probe says
// otherwise. A wrong guess costs speed, never correctness. Calls that only
// write (a bcast's root) or only read (the other ranks) time one side and
// decide nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace tutti {

class SlotWrites {
 public:
  // Every 32nd call probes: in the far-apart state a probe runs the slow
  // way, so probing more often costs more than the state changes need.
  static constexpr uint32_t kProbeEvery = 32;
  // Copies into the rank's own slot this many times slower (per byte)
  // than its reads of the peers' slots, in the same call, mean far-apart
  // cores: writing a line a far core last read must first take it from
  // there. Measured in probes here: 0.7-1.5 close (after the first touch
  // of the pages), 2.4-10 far. Comparing within the call keeps the test
  // independent of the machine's speed and of other load.
  static constexpr double kFarRatio = 2.0;
  // Copies shorter than this are not timed (the clock would dominate).
  static constexpr size_t kMinTimedBytes = 64 * 1024;

  // TUTTI_SHM_STREAM: a fixed choice, or nullopt for the automatic one.
  void force(std::optional<bool> streaming) { forced_ = streaming; }

  // How one call through the slots runs.
  struct CallMode {
    bool probe = false;      // time the reads of peers' slots
    bool streaming = false;  // write the slots with streaming stores
  };
  // For the next call through the slots; calls come in the same order on
  // every rank, so they agree on which calls probe.
  CallMode begin_call() {
    if (forced_) return {false, *forced_};
    const bool probe = calls_++ % kProbeEvery == 2;
    return {probe, !probe && far_};
  }

  // In a probe call: `bytes` of peers' slots read (copied out or reduced)
  // in `seconds`, or `bytes` copied from the rank's own buffer into its
  // slot.
  void note_peer_read(size_t bytes, double seconds) { peer_.add(bytes, seconds); }
  void note_own_copy(size_t bytes, double seconds) { own_.add(bytes, seconds); }
  // The probe call ended: decide, if it timed both kinds. Far takes two
  // probes in a row that say so (one can be a fluke: a page fault, an
  // interrupt), close takes one (a wrong "far" costs more in the usual
  // state).
  void end_probe() {
    if (peer_.seconds > 0 && own_.seconds > 0) {
      const bool says_far = own_.seconds_per_byte() > kFarRatio * peer_.seconds_per_byte();
      far_votes_ = says_far ? far_votes_ + 1 : 0;
      far_ = far_votes_ >= 2;
    }
    peer_ = {};
    own_ = {};
  }
  // What the last probe found (for tests and TUTTI_DEBUG).
  bool far() const { return far_; }

 private:
  struct Timed {
    size_t bytes = 0;
    double seconds = 0;
    void add(size_t b, double s) {
      bytes += b;
      seconds += s;
    }
    double seconds_per_byte() const { return seconds / static_cast<double>(bytes); }
  };
  std::optional<bool> forced_;
  uint64_t calls_ = 0;
  int far_votes_ = 0;  // probes in a row that found the cores far apart
  bool far_ = false;
  Timed peer_, own_;
};

}  // namespace tutti
