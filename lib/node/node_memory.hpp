// The shared segment of a single-node communicator: allocated collectively
// with MPI_Win_allocate_shared (portable, cleaned up by MPI even if a rank
// dies), first touched by the ranks that use each part, and freed
// collectively with the communicator.
#pragma once

#include <mpi.h>

#include <memory>

#include "node/shared_segment.hpp"

namespace tutti {

class NodeMemory {
 public:
  // Collective over `comm`, whose ranks must all share one node. Returns
  // null (on every rank) if `data_bytes` is 0 or MPI cannot provide shared
  // memory; throws Error on MPI failures after allocation started.
  // `shared_cores`: the node's ranks share cores (SharedSegment::signal_groups);
  // if any rank says so, every rank's segment is laid out for it.
  static std::unique_ptr<NodeMemory> allocate(MPI_Comm comm, size_t data_bytes, bool shared_cores);
  ~NodeMemory();  // collective (MPI_Win_free)

  SharedSegment& segment() { return segment_; }
  SharedPort& port() { return port_; }

 private:
  NodeMemory(MPI_Win win, void* base, size_t bytes, int nranks, int groups, int rank);
  MPI_Win win_;
  SharedSegment segment_;
  SharedPort port_;
};

// Default data bytes of the segment for `nranks` ranks: room for 2 MiB slots
// (2 parities x nranks), capped at 256 MiB; TUTTI_SHM_BYTES overrides it.
size_t default_node_memory_bytes(int nranks);

}  // namespace tutti
