#include "base/topology.hpp"

#include <algorithm>
#include <map>

namespace tutti {

NodeIndex NodeIndex::of(int nranks, const std::vector<int>& node_of_rank) {
  NodeIndex x;
  std::map<int, std::vector<int>> by_node;
  for (int r = 0; r < nranks; ++r)
    by_node[node_of_rank.empty() ? 0 : node_of_rank[static_cast<size_t>(r)]].push_back(r);
  x.group_of_rank.assign(static_cast<size_t>(nranks), 0);
  x.local_of_rank.assign(static_cast<size_t>(nranks), 0);
  x.min_ranks_per_node = nranks;
  for (auto& [node, ranks] : by_node) {
    const int group = static_cast<int>(x.ranks_of_node.size());
    for (size_t i = 0; i < ranks.size(); ++i) {
      x.group_of_rank[static_cast<size_t>(ranks[i])] = group;
      x.local_of_rank[static_cast<size_t>(ranks[i])] = static_cast<int>(i);
    }
    x.min_ranks_per_node = std::min(x.min_ranks_per_node, static_cast<int>(ranks.size()));
    x.ranks_of_node.push_back(std::move(ranks));
  }
  return x;
}

}  // namespace tutti
