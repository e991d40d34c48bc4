// Schedules over UCX's tag-matching API (UCP): one worker per communicator,
// endpoints created on first use from worker addresses exchanged with one
// MPI_Allgatherv at creation (O(P) per rank). UCX picks the wire: shared
// memory and CMA single-copy within a node, RDMA or TCP between nodes.
#pragma once

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <string>
#include <vector>

#include "transport.hpp"

namespace tutti {

class UcxTransport : public Transport {
 public:
  // Collective over `comm`. peer_errors: ask UCX to detect failed peers
  // (UCP_ERR_HANDLING_MODE_PEER; see the cost in transport_ucx.cpp).
  UcxTransport(MPI_Comm comm, bool peer_errors);
  ~UcxTransport() override;

  std::string_view name() const override { return "ucx"; }
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  Status send(int peer, Tag tag, const void* buf, size_t bytes, MemoryType mem,
              Completion* c) override;
  Status recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType mem, Completion* c) override;
  int progress() override;
  void cancel(Completion* c) override;
  bool supports(MemoryType mem) const override;

  // "ucx 1.13.1; memory types: host" for tutti-info and debug logs.
  std::string describe() const;
  // UCX's own version string.
  static std::string version();

 private:
  ucp_ep_h endpoint(int peer);

  MPI_Comm comm_;
  int rank_ = 0, nranks_ = 1;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<char> addresses_;       // every rank's worker address, concatenated
  std::vector<size_t> address_offsets_;
  std::vector<ucp_ep_h> endpoints_;
  uint64_t memory_types_ = 0;         // UCS_MEMORY_TYPE bits the context supports
  bool peer_errors_ = false;
  bool failed_peer_ = false;
};

}  // namespace tutti
