// The shape of a communicator: how many ranks, on how many nodes.
#pragma once

#include <cstddef>
#include <vector>

namespace tutti {

struct Topology {
  int nranks = 1;
  int nnodes = 1;
  int max_ranks_per_node = 1;
  std::vector<int> node_of_rank;  // node index (0..nnodes-1) of every rank
  // Data bytes of the node's shared segment (0: none). Single-node
  // communicators only, for the shared-memory algorithms.
  size_t shared_bytes = 0;
  // This rank's node has more ranks than CPUs they may run on (the union of
  // their affinity masks): waits then yield at once instead of spinning.
  bool oversubscribed = false;

  static Topology single_node(int nranks, size_t shared_bytes = 0) {
    return {nranks, 1, nranks, std::vector<int>(static_cast<size_t>(nranks), 0), shared_bytes};
  }
};

}  // namespace tutti
