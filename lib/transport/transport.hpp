// The transport interface the engine runs schedules over: tagged,
// non-blocking point-to-point messages between the ranks of one
// communicator. Implementations: UCX (default), MPI point-to-point, and the
// in-process simulator used by the tests.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.hpp"
#include "base/types.hpp"

namespace tutti {

// A 41-bit message tag. Collective messages carry (sequence number of the
// collective on the communicator, index of the message between the pair);
// user point-to-point messages carry the user's tag and a flag bit, so the
// two can never match each other. Transports add the source rank as needed.
using Tag = uint64_t;
inline constexpr int kTagSeqBits = 20;
inline constexpr int kTagIndexBits = 20;
inline constexpr uint32_t kTagSeqMask = (1u << kTagSeqBits) - 1;
inline constexpr uint32_t kMaxMessagesPerPair = 1u << kTagIndexBits;
// The last index: kept for a call's messages outside its schedule (alltoallv's
// exchange of counts inside a node, Comm::exchange_node_counts).
inline constexpr uint32_t kOutOfScheduleIndex = kMaxMessagesPerPair - 1;
inline constexpr Tag kTagUserFlag = Tag{1} << 40;
inline constexpr Tag kTagBits = 41;

inline Tag collective_tag(uint32_t seq, uint32_t index) {
  return (Tag{seq & kTagSeqMask} << kTagIndexBits) | index;
}
inline Tag user_tag(int tag) { return kTagUserFlag | static_cast<uint32_t>(tag); }
inline bool is_user_tag(Tag tag) { return (tag & kTagUserFlag) != 0; }
// tutti's own messages outside every schedule: tags of the user kind (so a
// receive may take them from any rank) with a bit no user tag sets (user
// tags fill the low 32 bits). One today: tutti_comm_abort's notice.
inline constexpr Tag kTagControlFlag = Tag{1} << 38;
inline constexpr Tag kAbortNoticeTag = kTagUserFlag | kTagControlFlag;
inline bool is_control_tag(Tag tag) { return is_user_tag(tag) && (tag & kTagControlFlag) != 0; }

// A receive's peer that matches a message from any rank (user point-to-point
// messages only: collective schedules always name their peers). The
// completion's `source` then says which rank the message came from.
inline constexpr int kAnySource = -1;

// Filled in by the transport when an operation finishes. Owned by the
// caller and must stay put until `done` (or until the transport has
// acknowledged a cancel by setting `done`). A transport may complete it from
// its progress thread (UCX across machines): it writes the other fields
// first and `done` last, and the caller reads them only after seeing `done`.
struct Completion {
  std::atomic<bool> done = false;
  Status status = TUTTI_SUCCESS;
  size_t bytes = 0;         // bytes actually received
  int source = -1;          // a receive: the rank the message came from
  void* handle = nullptr;   // transport-private
  std::string error;        // detail when status != success
  Completion() = default;
  // Copies only idle completions (a vector growing); the atomic is not copyable.
  Completion(const Completion& other)
      : done(other.done.load()), status(other.status), bytes(other.bytes),
        source(other.source), handle(other.handle), error(other.error) {}
  Completion& operator=(const Completion& other) {
    done = other.done.load();
    status = other.status;
    bytes = other.bytes;
    source = other.source;
    handle = other.handle;
    error = other.error;
    return *this;
  }
  void reset() {
    done = false;
    status = TUTTI_SUCCESS;
    bytes = 0;
    source = -1;
    handle = nullptr;
    error.clear();
  }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string_view name() const = 0;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;

  // Start a send or receive. A non-success return means nothing was posted
  // (and last_error says why); otherwise `c` completes later (or already has).
  // A receive must match a send of exactly `bytes` bytes; a different size
  // completes it with TUTTI_ERR_MISMATCH. A receive of a user tag may name
  // kAnySource as its peer; a transport that cannot match any source returns
  // TUTTI_ERR_UNSUPPORTED.
  [[nodiscard]] virtual Status send(int peer, Tag tag, const void* buf, size_t bytes,
                                    MemoryType mem, Completion* c) = 0;
  [[nodiscard]] virtual Status recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType mem,
                                    Completion* c) = 0;
  // Makes progress; returns how many events it handled (0 = idle).
  virtual int progress() = 0;
  // The calling thread starts (true) or ends (false) a wait that calls
  // progress() at every turn; waits may nest. A transport with a progress
  // thread of its own keeps that thread off the transport meanwhile.
  virtual void user_polls(bool /*starts*/) {}
  // Asks for a pending operation to stop. `c` is marked done (with an error)
  // immediately or by a later progress() call, after which its buffer is
  // no longer touched.
  virtual void cancel(Completion* c) = 0;
  // Whether this transport can move `mem` memory itself.
  virtual bool supports(MemoryType mem) const { return mem == MemoryType::Host; }
  // Whether progress() calls into the MPI library (a wait polling it must
  // not sleep between polls: Comm::Patience).
  virtual bool polls_mpi() const { return false; }
  // For a timeout's message: a message from `peer` that arrived and no
  // receive has matched ("call #14, message 3, 524288 bytes"), or empty. It
  // tells a message that never came from one the ranks label differently.
  virtual std::string unmatched_from(int /*peer*/) { return {}; }
};

// "call #14, message 3" or "point-to-point tag 5": what a tag names (the
// call's number modulo 2^20, as the tag carries it).
inline std::string describe_tag(Tag tag) {
  if (tag == kAbortNoticeTag) return "an abort notice";
  if (is_user_tag(tag)) return str("point-to-point tag ", static_cast<int32_t>(tag & 0xffffffffu));
  const uint64_t index = tag & (kMaxMessagesPerPair - 1);
  const uint64_t seq = (tag >> kTagIndexBits) & kTagSeqMask;
  if (index == kOutOfScheduleIndex) return str("call #", seq, ", outside its schedule");
  return str("call #", seq, ", message ", index);
}

}  // namespace tutti
