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
// Host buffers pass through untouched, except that a host send queued
// behind a staged send with the same (peer, tag) waits for it, so messages
// between a pair never overtake each other.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cuda/pinned_pool.hpp"
#include "transport/transport.hpp"

namespace tutti::cuda {

enum class StagingMode { Auto, Always, Never };

// TUTTI_CUDA_STAGING: unset/"auto", "1" (always), "0" (never). Throws Error
// on any other value.
StagingMode staging_mode_from_env();

class StagingTransport final : public Transport {
 public:
  // Throws Error where `mode` is Never and `inner` cannot move CUDA memory.
  StagingTransport(std::unique_ptr<Transport> inner, StagingMode mode);
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

  // Whether device buffers go through pinned memory (else straight through).
  bool staging() const { return staging_; }
  Transport& inner() { return *inner_; }
  size_t pinned_bytes_held() const { return pinned_.bytes_held(); }
  size_t staged_in_flight() const { return staged_.size(); }
  // "staging device buffers through pinned host memory" or "direct".
  std::string describe_mode() const;

 private:
  struct Staged;
  struct EventScan;
  int advance(Staged& s, std::vector<std::pair<int, Tag>>& blocked, EventScan& events);
  static void answer(Staged& s, Status status, std::string error, size_t bytes);

  std::unique_ptr<Transport> inner_;  // declared first: destroyed last
  bool staging_ = true;
  PinnedPool pinned_;  // see pinned_pool.hpp
  // In posting order: sends to one (peer, tag) are handed on in this order.
  std::vector<std::unique_ptr<Staged>> staged_;
  uint64_t events_recorded_ = 0;  // numbers the copies' events in recording order
};

}  // namespace tutti::cuda
