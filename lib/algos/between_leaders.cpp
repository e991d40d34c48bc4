#include "algos/between_leaders.hpp"

#include <vector>

namespace tutti::algos {

void append_leaders_exchange_blocks(ScheduleBuilder& b, const NodeGroups& g, size_t m) {
  auto block = [m](int rank) { return output(static_cast<size_t>(rank) * m); };
  const std::vector<int>& mine = g.my_node_ranks();
  for (const int node : g.other_nodes()) {
    const std::vector<int>& theirs = g.ranks_of_node()[static_cast<size_t>(node)];
    const int peer = theirs.front();
    for_each_run(mine, [&](int first, int count, int) {
      b.send(peer, block(first), static_cast<size_t>(count) * m);
    });
    for_each_run(theirs, [&](int first, int count, int) {
      b.recv(peer, block(first), static_cast<size_t>(count) * m);
    });
  }
  b.end_round();
}

void append_leaders_reduce_partial_sums(ScheduleBuilder& b, const NodeGroups& g, BufRef work,
                                        size_t m) {
  auto at = [m](BufRef base, int rank) { return base + static_cast<size_t>(rank) * m; };
  const std::vector<int>& mine = g.my_node_ranks();
  const size_t mine_bytes = mine.size() * m;
  const BufRef landing = b.scratch(mine_bytes * static_cast<size_t>(g.nnodes() - 1));
  auto landing_of = [&](int node) {  // the other nodes in order, mine skipped
    return landing + static_cast<size_t>(node < g.my_node ? node : node - 1) * mine_bytes;
  };
  for (const int node : g.other_nodes()) {
    const std::vector<int>& theirs = g.ranks_of_node()[static_cast<size_t>(node)];
    const int peer = theirs.front();
    for_each_run(theirs, [&](int first, int count, int) {
      b.send(peer, at(work, first), static_cast<size_t>(count) * m);
    });
    for_each_run(mine, [&](int, int count, int offset) {
      b.recv(peer, at(landing_of(node), offset), static_cast<size_t>(count) * m);
    });
  }
  b.end_round();
  // Reduced in node order, the leader's own partial sum in its place, so
  // that the sum's order depends on the nodes, not on who computes.
  const BufRef sum = b.scratch(mine_bytes);
  for_each_run(mine, [&](int first, int count, int offset) {
    const size_t bytes = static_cast<size_t>(count) * m;
    bool started = false;
    for (int node = 0; node < g.nnodes(); ++node) {
      const BufRef part = node == g.my_node ? at(work, first) : at(landing_of(node), offset);
      if (!started) b.copy(at(sum, offset), part, bytes);
      else b.reduce(at(sum, offset), at(sum, offset), part, bytes);
      started = true;
    }
    b.copy(at(work, first), at(sum, offset), bytes);
  });
}

}  // namespace tutti::algos
