// CUDA IPC between the ranks of one node, the parts that need no GPU (so
// that the host tests can check them): the offer a sender posts instead of
// its data, how a receiver recognises one, the acknowledgement's tag, and
// the receiver's cache of opened handles. StagingTransport
// (staging_transport.cpp) runs the protocol:
//
//   sender (a collective's device message of at least kIpcMinBytes to a
//   rank of its node): waits for the work enqueued on tutti's stream
//   before it (the message's data), then sends an Offer (the allocation's
//   cudaIpcMemHandle, the offset and size) as a host message with the
//   message's own tag, and receives the receiver's acknowledgement (tag
//   ipc_ack_tag) before it completes: until then the receiver reads its
//   buffer.
//   receiver: posts its receive as it would for data (into pinned memory,
//   or the user's host buffer), so either may arrive: a message of exactly
//   sizeof(Offer) bytes carrying kOfferMagic, for a receive of more, is an
//   offer. It opens the handle (cached), copies from the sender's buffer
//   straight into its own with one device copy, and acknowledges with the
//   copy's status once the copy is done. Where it cannot open the handle
//   (GPUs that cannot reach each other, a container or MPS without IPC),
//   it acknowledges with kIpcAckSendData and receives the data, staged,
//   under ipc_data_tag; the sender then sends it so, and stages every later
//   message to that rank.
//
// One device copy instead of device -> pinned -> wire -> pinned -> device.
// Only the sender decides (it alone knows its buffer is on the device and
// whether it can export it); a receiver takes data or an offer alike, so a
// rank whose call runs on the host (a reduce's root with host buffers)
// still receives from one on the device.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/lru_cache.hpp"
#include "transport/transport.hpp"

namespace tutti::cuda {

// Messages below this size keep the staged path: an offer costs a round
// trip (the acknowledgement) that a small copy through pinned memory does
// not.
inline constexpr size_t kIpcMinBytes = 64 * 1024;
// ... and from this size: the MPI transport splits larger messages into
// pieces, each a receive of its own, which one offer would not fill.
inline constexpr size_t kIpcMaxBytes = size_t{1} << 30;

// TUTTI_CUDA_IPC: unset or "0" (off), "1" (on where it applies). nullopt
// for anything else. Off by default until the path has run on a GPU.
inline std::optional<bool> ipc_wanted_from_text(const char* text) {
  const std::string_view v = text ? text : "";
  if (v.empty() || v == "0" || v == "off" || v == "no" || v == "false") return false;
  if (v == "1" || v == "on" || v == "yes" || v == "true") return true;
  return std::nullopt;
}

// What a sender posts instead of the data. The handle is a
// cudaIpcMemHandle_t's 64 bytes; `offset` is the buffer's place in the
// allocation the handle names (cudaIpcOpenMemHandle maps its start).
struct Offer {
  uint64_t magic = 0;
  uint64_t bytes = 0;   // the message's size: the receive's, or a mismatch
  uint64_t offset = 0;
  int32_t device = -1;  // the sender's device (for the error messages)
  int32_t reserved = 0;
  std::array<char, 64> handle{};
};
static_assert(sizeof(Offer) == 96);
inline constexpr uint64_t kOfferMagic = 0x7475747469495043ull;  // "tuttiIPC"

// Whether `received` bytes at `data`, for a receive of `posted` bytes, are
// an offer (then copied into `out`).
inline bool is_offer(const void* data, size_t received, size_t posted, Offer* out) {
  if (received != sizeof(Offer) || posted <= sizeof(Offer)) return false;
  Offer o;
  std::memcpy(&o, data, sizeof o);
  if (o.magic != kOfferMagic) return false;
  *out = o;
  return true;
}

// Which messages may go through IPC: a collective's (user point-to-point
// receives may name any source and any size) whose message index leaves
// free the two top bits, which the acknowledgement and a refused offer's
// data set. A schedule reaches them only with 2^18 messages or more
// between one pair in one collective (those beyond stay staged), and
// collides with them only from 2^19.
inline constexpr Tag kIpcAckBit = Tag{1} << (kTagIndexBits - 1);
inline constexpr Tag kIpcDataBit = Tag{1} << (kTagIndexBits - 2);
inline bool ipc_tag_allowed(Tag tag) {
  return !is_user_tag(tag) && (tag & (kIpcAckBit | kIpcDataBit)) == 0;
}
// The acknowledgement of the offer with `tag`, sent back by the receiver.
inline Tag ipc_ack_tag(Tag tag) { return tag | kIpcAckBit; }
// The data of a refused offer, sent by the sender. Not the acknowledgement's
// tag: when two ranks offer each other a message under one tag (a ring's
// step on two ranks) and both refuse, one direction carries this rank's
// acknowledgement of the peer's offer and this rank's refused data, and
// a receive must not take one for the other.
inline Tag ipc_data_tag(Tag tag) { return tag | kIpcAckBit | kIpcDataBit; }
// An acknowledgement's payload: a Status, or this (send the data instead).
inline constexpr int64_t kIpcAckSendData = -1;

// The sender's exported handles: exporting (cudaIpcGetMemHandle) costs a
// driver call per message otherwise, and a pipelined schedule sends a
// buffer in many chunks. Keyed by the allocation's start and the driver's
// unique id of it, so a new allocation at a freed one's address is
// exported anew; at most `capacity` kept, the least recently used dropped
// (a handle needs no closing).
class IpcExports {
 public:
  using Handle = std::array<char, 64>;
  using Export = std::function<bool(uintptr_t start, Handle& out)>;
  IpcExports(Export exporter, size_t capacity) : export_(std::move(exporter)), cache_(capacity) {}

  // The handle of the allocation (start, id); false where it cannot be exported.
  bool handle_of(uintptr_t start, uint64_t id, Handle& out) {
    if (const Handle* kept = cache_.find({start, id})) {
      out = *kept;
      return true;
    }
    if (!export_(start, out)) return false;
    cache_.insert({start, id}, out);
    return true;
  }
  size_t size() const { return cache_.size(); }

 private:
  struct Allocation {
    uintptr_t start;
    uint64_t id;
    bool operator==(const Allocation&) const = default;
  };
  Export export_;
  LruCache<Allocation, Handle> cache_;
};

// The receiver's opened handles, per sender: opening costs a driver call
// and some microseconds, and a buffer is sent from again and again. Keyed
// by the handle's bytes (a new allocation has a new handle, even at an old
// address); at most `capacity` open, the least recently used closed first.
// A mapping keeps its allocation alive on the device while it is open, so
// the cap also bounds the memory that senders freed and this rank still
// maps. The opener and closer are CUDA's in staging_transport.cpp, plain
// functions in the tests.
//
// CUDA maps a sender's buffer here at the address it has in the sender. A
// sender that freed a buffer this rank still maps and allocated a new one
// over the same addresses (cudaMalloc reuses them) offers a handle that
// cannot be opened while the old mapping holds them (cudaErrorAlreadyMapped,
// "address in use"): then every mapping is closed and the open tried once
// more, as UCX's cuda_ipc cache does. Closing all, not only the sender's,
// because the mapping in the way need not be that sender's.
class IpcMappings {
 public:
  using Handle = std::array<char, 64>;
  struct Opened {
    void* base = nullptr;
    bool address_in_use = false;  // a mapping held here overlaps it
  };
  using Open = std::function<Opened(int peer, const Handle&, std::string& why)>;
  using Close = std::function<void(void*)>;
  IpcMappings(Open open, Close close, size_t capacity)
      : open_(std::move(open)), cache_(capacity, [close = std::move(close)](void*& base) { close(base); }) {}

  // The start of the allocation `handle` of `peer` names, mapped here;
  // null (and `why`) where it cannot be opened.
  void* map(int peer, const Handle& handle, std::string& why) {
    if (void** kept = cache_.find({peer, handle})) return *kept;
    Opened opened = open_(peer, handle, why);
    if (!opened.base && opened.address_in_use && cache_.size() > 0) {
      clear();
      ++reopened_;
      why.clear();
      opened = open_(peer, handle, why);
    }
    if (!opened.base) return nullptr;
    cache_.insert({peer, handle}, opened.base);
    ++opened_;
    return opened.base;
  }
  // Closes every mapping (also done by the destructor).
  void clear() { cache_.clear(); }
  size_t open_count() const { return cache_.size(); }
  uint64_t opened_total() const { return opened_; }
  // Opens that found their addresses held by an old mapping (all closed).
  uint64_t reopened_total() const { return reopened_; }

 private:
  struct PeerHandle {
    int peer;
    Handle handle;
    bool operator==(const PeerHandle&) const = default;
  };
  Open open_;
  LruCache<PeerHandle, void*> cache_;
  uint64_t opened_ = 0, reopened_ = 0;
};

}  // namespace tutti::cuda
