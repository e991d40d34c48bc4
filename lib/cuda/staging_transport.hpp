// A Transport decorator that lets any transport move CUDA device buffers:
// where the inner transport cannot (UCX built without CUDA, as Debian's is;
// the MPI transport), device messages go through pinned host memory.
//
//   send:    device --cudaMemcpyAsync--> pinned, on the copy-out stream;
//            once that copy's event has fired (polled in progress()), the
//            pinned buffer is sent as a host message.
//   receive: the message lands in pinned memory; on arrival it is copied to
//            the device on the copy-in stream, and the receive completes
//            once that copy's event has fired.
// Each copy waits (on the device, through an event) for the work enqueued
// on tutti's stream before it, so a send copy starts after the kernel that
// produced its data with no host wait in between; copies in and out run at
// once on the two copy engines (cuda/runtime.hpp, copy_stream; with
// TUTTI_CUDA_COPY_STREAMS=0 both go to tutti's stream). The schedules'
// chunked messages pipeline: chunk k+1 is copied while chunk k is on the
// wire.
//
// Where the inner transport does move CUDA memory (UCX with cuda_copy /
// cuda_ipc / GPUDirect RDMA), device buffers go straight to it after tutti's
// stream is drained (the transport reads the buffers outside that stream).
// TUTTI_CUDA_STAGING=1 forces staging even then; =0 forbids it, and then a
// transport without CUDA support is an error at tutti_comm_create.
//
// With CUDA IPC on (TUTTI_CUDA_IPC=1, agreed by every rank at
// tutti_comm_create), a collective's device message of 64 KiB or more to a
// rank of the same node goes as an offer of the sender's buffer instead,
// which the receiver copies from with one device copy (ipc_protocol.hpp);
// receives of that size from the node's ranks then watch for offers.
//
// Host buffers pass through untouched, except that a host send queued
// behind a staged send with the same (peer, tag) waits for it, so messages
// between a pair never overtake each other.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cuda/ipc_protocol.hpp"
#include "cuda/pinned_pool.hpp"
#include "transport/transport.hpp"

namespace tutti::cuda {

enum class StagingMode { Auto, Always, Never };

// TUTTI_CUDA_STAGING: unset/"auto", "1" (always), "0" (never). Throws Error
// on any other value.
StagingMode staging_mode_from_env();

// CUDA IPC between the ranks of a node: on for every rank of the
// communicator or for none, and which ranks share this rank's node.
struct IpcSetup {
  bool enabled = false;
  std::vector<char> same_node;  // per rank
  bool log_refusal = false;     // say on stderr why the first refused offer was (TUTTI_DEBUG)
};

class StagingTransport final : public Transport {
 public:
  // Throws Error where `mode` is Never and `inner` cannot move CUDA memory.
  StagingTransport(std::unique_ptr<Transport> inner, StagingMode mode, IpcSetup ipc = {});
  ~StagingTransport() override;

  std::string_view name() const override { return inner_->name(); }
  int rank() const override { return inner_->rank(); }
  int nranks() const override { return inner_->nranks(); }
  [[nodiscard]] Status send(int peer, Tag tag, const void* buf, size_t bytes, MemoryType mem,
                            Completion* c) override;
  [[nodiscard]] Status recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType mem,
                            Completion* c) override;
  int progress() override;
  void cancel(Completion* c) override;
  bool supports(MemoryType) const override { return true; }
  bool polls_mpi() const override { return inner_->polls_mpi(); }

  // Whether device buffers go through pinned memory (else straight through).
  bool staging() const { return staging_; }
  Transport& inner() { return *inner_; }
  size_t pinned_bytes_held() const { return pinned_.bytes_held(); }
  size_t staged_in_flight() const { return staged_.size(); }
  // "staging device buffers through pinned host memory" or "direct".
  std::string describe_mode() const;
  // Device messages that went through CUDA IPC: sent as offers, received as
  // offers; device sends that could not be exported (cudaMallocAsync
  // pools, managed memory: staged instead); offers refused (this rank could
  // not map a sender's buffer, or a receiver could not map this rank's:
  // the data went staged).
  struct IpcCounts {
    uint64_t offered = 0, copied = 0, not_exported = 0, refused = 0;
  };
  const IpcCounts& ipc_counts() const { return ipc_counts_; }

 private:
  struct Staged;
  struct EventScan;
  int advance(Staged& s, std::vector<std::pair<int, Tag>>& blocked, EventScan& events);
  static void answer(Staged& s, Status status, std::string error, size_t bytes);
  // Answers the user and ends the record; returns 1 (an event handled).
  static int finish(Staged& s, Status status, std::string error, size_t bytes);
  // Whether a message of `bytes` with `tag` between this rank and `peer`
  // may go through IPC (the sender offers, the receiver watches for it).
  bool ipc_applies(int peer, Tag tag, size_t bytes) const;
  // A device send as an offer; null where the buffer cannot be exported.
  std::unique_ptr<Staged> offer(int peer, Tag tag, const void* buf, size_t bytes, Status& st);
  int post_offer(Staged& s);
  int finish_offer(Staged& s);
  static std::unique_ptr<Staged> receive_record(int peer, Tag tag, size_t bytes, bool watch);
  Status post_receive(std::unique_ptr<Staged> s, void* into, Completion* c);
  // A receive that found an offer: maps the sender's buffer and copies.
  int copy_offered(Staged& s, const Offer& offer);
  int receive_refused_offer(Staged& s, const std::string& why);
  int stage_refused_offer(Staged& s);
  void acknowledge(Staged& s, Status status);

  std::unique_ptr<Transport> inner_;  // declared first: destroyed last
  bool staging_ = true;
  PinnedPool pinned_;  // see pinned_pool.hpp
  IpcSetup ipc_;
  IpcCounts ipc_counts_;
  std::unique_ptr<IpcMappings> mappings_;  // the senders' buffers opened here
  std::unique_ptr<IpcExports> exports_;    // this rank's buffers' handles
  // Per rank: it refused an offer of this rank's, so it gets no more (it
  // still watches for offers: it cannot know this rank stopped).
  std::vector<char> refused_by_;
  // In posting order: sends to one (peer, tag) are handed on in this order.
  std::vector<std::unique_ptr<Staged>> staged_;
  uint64_t events_recorded_ = 0;  // numbers the copies' events in recording order
};

}  // namespace tutti::cuda
