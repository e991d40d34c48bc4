// The shape of a communicator: how many ranks, on how many nodes.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace tutti {

// The ranks of every node, derived from Topology::node_of_rank: nodes in
// order of their index (nodes that hold no rank dropped), each node's ranks
// ascending, and every rank's place among them.
struct NodeIndex {
  std::vector<std::vector<int>> ranks_of_node;
  std::vector<int> group_of_rank;  // index into ranks_of_node
  std::vector<int> local_of_rank;  // index among its node's ranks
  int min_ranks_per_node = 1;

  // node_of_rank empty: every rank on one node.
  static NodeIndex of(int nranks, const std::vector<int>& node_of_rank);
};

struct Topology {
  int nranks = 1;
  int nnodes = 1;
  int max_ranks_per_node = 1;
  std::vector<int> node_of_rank;  // node index (0..nnodes-1) of every rank
  // Data bytes of each node's shared segment, which serves the
  // communicator's ranks on that node (0: none). The same on every rank:
  // algorithms size their chunks by it. Single-node communicators use it
  // in the shared-memory algorithms (*_shm), jobs across nodes in the
  // node-aware ones.
  size_t shared_bytes = 0;
  // The ranks of each node may read each other's buffers in place
  // (node/peer_memory.hpp: cross-memory attach, probed at creation on every
  // node of several ranks and agreed by all ranks; TUTTI_CMA=0 turns it
  // off). The *_cma algorithms refuse without it.
  bool peer_reads = false;
  // Whether a peer read beat the segment's two copies in the probe at
  // creation (node/read_probe.hpp; agreed by all ranks): tuning rules with
  // reads=fast or reads=slow match on it. True where nothing was probed.
  bool fast_reads = true;
  // This rank's node has more ranks than CPUs they may run on (the union of
  // their affinity masks): waits then yield at once instead of spinning.
  bool oversubscribed = false;
  // Whether the ranks of some node of the communicator outnumber its CPUs:
  // the same on every rank (agreed at creation), so that rules may use it.
  bool shared_cores = false;
  // node_of_rank indexed once (index_nodes()), shared by copies, so that the
  // schedule of each of p ranks does not rescan all p (the cost model builds
  // every rank's). Absent: users index on the fly.
  std::shared_ptr<const NodeIndex> nodes;

  // Call after node_of_rank is final.
  void index_nodes() { nodes = std::make_shared<const NodeIndex>(NodeIndex::of(nranks, node_of_rank)); }

  static Topology single_node(int nranks, size_t shared_bytes = 0) {
    Topology t{nranks, 1, nranks, std::vector<int>(static_cast<size_t>(nranks), 0), shared_bytes};
    t.index_nodes();
    return t;
  }
};

}  // namespace tutti
