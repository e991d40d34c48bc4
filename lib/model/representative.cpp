#include "model/representative.hpp"

#include <optional>

#include "base/status.hpp"

namespace tutti::model {
namespace {

// Ranks per node when every node holds the same number, numbered node by
// node; nothing otherwise.
std::optional<int> uniform_ranks_per_node(const Topology& t) {
  if (t.nnodes < 1 || t.nranks % t.nnodes != 0) return std::nullopt;
  const int l = t.nranks / t.nnodes;
  for (int r = 0; r < t.nranks; ++r)
    if (t.node_of_rank[static_cast<size_t>(r)] != r / l) return std::nullopt;
  return l;
}

// `b` is `a` with every peer moved by `shift` ranks.
bool same_but_moved(const Schedule& a, const Schedule& b, int shift, int p) {
  if (a.steps.size() != b.steps.size() || a.rounds.size() != b.rounds.size()) return false;
  for (size_t i = 0; i < a.rounds.size(); ++i)
    if (a.rounds[i].begin != b.rounds[i].begin || a.rounds[i].comm_begin != b.rounds[i].comm_begin ||
        a.rounds[i].end != b.rounds[i].end)
      return false;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const Step& x = a.steps[i];
    const Step& y = b.steps[i];
    if (x.kind != y.kind || x.bytes != y.bytes || x.msg_index != y.msg_index) return false;
    if (x.is_communication() && (x.peer + shift) % p != y.peer) return false;
  }
  return true;
}

}  // namespace

Schedule build_schedule(const algos::Algorithm& algo, const CollArgs& args, const Topology& topo,
                        int rank, size_t* requests) {
  ScheduleBuilder b(args, rank, topo);
  algo.build(b);
  if (requests) *requests = b.requests();
  return b.finish();
}

Representatives representatives_of(const algos::Algorithm& algo, const CollArgs& args,
                                   const Topology& topo) {
  Representatives reps;
  const std::optional<int> per_node = uniform_ranks_per_node(topo);
  if (!per_node) {
    reps.error = "nodes of unequal size, or ranks not numbered node by node";
    return reps;
  }
  const int l = *per_node, p = topo.nranks, nodes = topo.nnodes;
  for (int j = 0; j < l; ++j) {
    reps.schedules.push_back(build_schedule(algo, args, topo, j));
    if (reps.schedules.back().uses_shared) {
      reps.error = "shared-memory steps";
      return reps;
    }
  }
  for (int node : {1, nodes / 2}) {
    if (node <= 0 || node >= nodes) continue;
    for (int j : {0, l - 1}) {
      const Schedule moved = build_schedule(algo, args, topo, node * l + j);
      if (!same_but_moved(reps.schedules[static_cast<size_t>(j)], moved, node * l, p)) {
        reps.error = str("rank ", node * l + j, " does not do what rank ", j, " does, moved by ",
                         node, node == 1 ? " node" : " nodes");
        return reps;
      }
    }
  }
  reps.ranks_per_node = l;
  return reps;
}

}  // namespace tutti::model
