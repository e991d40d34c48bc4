// The in-process simulator: every rank of a virtual job lives in one process
// and one thread; a SimNetwork matches their messages. Deterministic, so the
// unit tests can run every algorithm for hundreds of ranks, and strict: a
// receive of the wrong size is a mismatch, and in rendezvous mode a send only
// completes once received, which exposes schedules that would deadlock on a
// real network.
//
// Threaded mode gives each rank a thread of its own, as real ranks run
// concurrently (the ThreadSanitizer test): the network is then locked, and a
// completion is handed to its owner's thread through progress() rather than
// written by the peer's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "transport/transport.hpp"

namespace tutti {

class SimNetwork {
 public:
  enum class Mode { Eager, Rendezvous };
  SimNetwork(int nranks, Mode mode, bool threaded = false)
      : nranks_(nranks), mode_(mode), threaded_(threaded), finished_(static_cast<size_t>(nranks)) {}

  int nranks() const { return nranks_; }
  Mode mode() const { return mode_; }
  // Deliver a message into a larger receive (its length reported), as UCX
  // and MPI do, instead of failing it as a mismatch. Off by default: the
  // schedules' tests want every size to match.
  void accept_shorter(bool on) { accept_shorter_ = on; }
  // Messages sent and not yet received (should be 0 after a collective).
  size_t in_flight() const;
  uint64_t messages_delivered() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return delivered_;
  }

 private:
  friend class SimTransport;
  struct PendingSend {
    const void* data;           // rendezvous: the sender's buffer
    std::vector<char> copy;     // eager: a copy taken at send time
    size_t bytes;
    Completion* completion;     // rendezvous: completed when received
  };
  struct PendingRecv {
    void* buf;
    size_t bytes;
    Completion* completion;
  };
  using Key = std::tuple<int, int, Tag>;  // source, destination, tag

  // A completion waiting for its owner's progress() (threaded mode).
  struct Finished {
    Completion* completion;
    size_t bytes;
    Status status;
    std::string error;
  };

  void deliver(PendingSend& s, PendingRecv& r, int source, int destination);
  void complete(int owner, Completion* c, size_t bytes, Status status, std::string error);

  int nranks_;
  Mode mode_;
  bool threaded_;
  bool accept_shorter_ = false;
  mutable std::mutex mutex_;  // locked by every operation (uncontended unless threaded)
  std::map<Key, std::deque<PendingSend>> sends_;
  std::map<Key, std::deque<PendingRecv>> recvs_;
  std::vector<std::vector<Finished>> finished_;  // per owner rank
  uint64_t delivered_ = 0;
};

class SimTransport : public Transport {
 public:
  SimTransport(SimNetwork& net, int rank) : net_(net), rank_(rank) {}
  std::string_view name() const override { return "sim"; }
  int rank() const override { return rank_; }
  int nranks() const override { return net_.nranks(); }
  Status send(int peer, Tag tag, const void* buf, size_t bytes, MemoryType mem,
              Completion* c) override;
  Status recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType mem, Completion* c) override;
  // Matching happens when posting; in threaded mode this hands over the
  // completions other ranks' threads finished for this rank.
  int progress() override;
  void cancel(Completion* c) override;

 private:
  SimNetwork& net_;
  int rank_;
};

}  // namespace tutti
