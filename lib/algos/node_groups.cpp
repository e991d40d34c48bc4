#include "algos/node_groups.hpp"

#include <algorithm>
#include <map>

namespace tutti::algos {

std::vector<int> NodeGroups::first_local_ranks(int n) const {
  const std::vector<int>& mine = my_node_ranks();
  return {mine.begin(), mine.begin() + n};
}

std::vector<int> NodeGroups::rail(int local) const {
  std::vector<int> out;
  out.reserve(ranks_of_node.size());
  for (const std::vector<int>& node : ranks_of_node) out.push_back(node[static_cast<size_t>(local)]);
  return out;
}

int NodeGroups::node_of(int rank) const {
  for (size_t k = 0; k < ranks_of_node.size(); ++k) {
    const std::vector<int>& node = ranks_of_node[k];
    if (std::binary_search(node.begin(), node.end(), rank)) return static_cast<int>(k);
  }
  return -1;
}

int NodeGroups::local_index_of(int rank) const {
  const std::vector<int>& node = ranks_of_node[static_cast<size_t>(node_of(rank))];
  return static_cast<int>(std::lower_bound(node.begin(), node.end(), rank) - node.begin());
}

std::vector<int> NodeGroups::leaders_for_root(int root) const {
  std::vector<int> out = rail(0);
  const int root_node = node_of(root);
  if (root_node >= 0) out[static_cast<size_t>(root_node)] = root;
  return out;
}

NodeGroups node_groups_of(const Topology& topo, int rank) {
  NodeGroups g;
  // Nodes in order of their index; a communicator made by a split may use
  // only some of the job's node indices.
  std::map<int, std::vector<int>> by_node;
  for (int r = 0; r < topo.nranks; ++r) {
    const int node = topo.node_of_rank.empty() ? 0 : topo.node_of_rank[static_cast<size_t>(r)];
    by_node[node].push_back(r);
  }
  for (auto& [node, ranks] : by_node) {
    const auto me = std::find(ranks.begin(), ranks.end(), rank);
    if (me != ranks.end()) {
      g.my_node = static_cast<int>(g.ranks_of_node.size());
      g.my_local = static_cast<int>(me - ranks.begin());
    }
    g.ranks_of_node.push_back(std::move(ranks));
  }
  g.min_ranks_per_node = topo.nranks;
  for (const std::vector<int>& node : g.ranks_of_node)
    g.min_ranks_per_node = std::min(g.min_ranks_per_node, static_cast<int>(node.size()));
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
