// The node structure of a communicator, as the node-aware (hierarchical)
// algorithms use it: the ranks of every node in rank order, this rank's
// node and local index, and the groups that link the nodes (the ranks with
// the same local index on every node). Nodes may hold different numbers of
// ranks, and ranks need not be numbered node by node (srun's cyclic
// distribution): everything follows Topology::node_of_rank.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "base/topology.hpp"

namespace tutti::algos {

struct NodeGroups {
  std::shared_ptr<const NodeIndex> index;  // the communicator's, shared by every rank's
  int my_node = 0;
  int my_local = 0;          // index of this rank among its node's ranks
  int min_ranks_per_node = 1;

  const std::vector<std::vector<int>>& ranks_of_node() const { return index->ranks_of_node; }
  int nnodes() const { return static_cast<int>(index->ranks_of_node.size()); }
  const std::vector<int>& my_node_ranks() const { return ranks_of_node()[static_cast<size_t>(my_node)]; }
  // The first `n` ranks of this rank's node.
  std::vector<int> first_local_ranks(int n) const;
  // The rank with local index `local` on every node, in node order
  // (local < min_ranks_per_node, so every node has one).
  std::vector<int> rail(int local) const;
  // The node (index into ranks_of_node) that holds `rank`.
  int node_of(int rank) const { return index->group_of_rank[static_cast<size_t>(rank)]; }
  // The index of `rank` among the ranks of its node.
  int local_index_of(int rank) const { return index->local_of_rank[static_cast<size_t>(rank)]; }
  // The other nodes, the next one first (my_node + 1, ..., wrapping round).
  // Where every node sends to every other at once, each then starts with a
  // different node, so no node is everyone's first receiver, and every
  // node's schedule is node 0's moved by whole nodes, which the cost model
  // needs to predict it on thousands of ranks (model/representative.hpp).
  std::vector<int> other_nodes() const;
  // The leaders of a rooted collective, one per node in node order: the
  // root on its node, the first rank on every other node.
  std::vector<int> leaders_for_root(int root) const;
};

// Nodes that hold no rank of the communicator are dropped. O(1) where the
// topology is indexed (Topology::index_nodes), O(p) otherwise.
NodeGroups node_groups_of(const Topology& topo, int rank);

// Calls f(first, count, offset) for every run of consecutive ranks in
// `ranks` (ascending), offset counting the ranks of earlier runs: a node
// whose ranks are numbered consecutively (mpirun's default) is one run, so
// its blocks move in one message.
void for_each_run(const std::vector<int>& ranks,
                  const std::function<void(int first, int count, int offset)>& f);

}  // namespace tutti::algos
