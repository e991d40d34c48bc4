#include "algos/node_groups.hpp"

#include <algorithm>

namespace tutti::algos {

std::vector<int> NodeGroups::first_local_ranks(int n) const {
  const std::vector<int>& mine = my_node_ranks();
  return {mine.begin(), mine.begin() + n};
}

std::vector<int> NodeGroups::rail(int local) const {
  std::vector<int> out;
  out.reserve(ranks_of_node().size());
  for (const std::vector<int>& node : ranks_of_node()) out.push_back(node[static_cast<size_t>(local)]);
  return out;
}

std::vector<int> NodeGroups::other_nodes() const {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(nnodes()));
  for (int k = 1; k < nnodes(); ++k) out.push_back((my_node + k) % nnodes());
  return out;
}

std::vector<int> NodeGroups::leaders_for_root(int root) const {
  std::vector<int> out = rail(0);
  out[static_cast<size_t>(node_of(root))] = root;
  return out;
}

NodeGroups node_groups_of(const Topology& topo, int rank) {
  NodeGroups g;
  g.index = topo.nodes && static_cast<int>(topo.nodes->group_of_rank.size()) == topo.nranks
                ? topo.nodes
                : std::make_shared<const NodeIndex>(NodeIndex::of(topo.nranks, topo.node_of_rank));
  g.my_node = g.node_of(rank);
  g.my_local = g.local_index_of(rank);
  g.min_ranks_per_node = g.index->min_ranks_per_node;
  return g;
}

void for_each_run(const std::vector<int>& ranks,
                  const std::function<void(int first, int count, int offset)>& f) {
  size_t i = 0;
  while (i < ranks.size()) {
    size_t j = i + 1;
    while (j < ranks.size() && ranks[j] == ranks[j - 1] + 1) ++j;
    f(ranks[i], static_cast<int>(j - i), static_cast<int>(i));
    i = j;
  }
}

}  // namespace tutti::algos
