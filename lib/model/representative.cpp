#include "model/representative.hpp"

#include <bit>
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

// `b` is `a` with every peer moved by `shift` ranks (Xor: xor'ed with it).
bool same_but_moved(const Schedule& a, const Schedule& b, int shift, int p, Symmetry s) {
  if (a.steps.size() != b.steps.size() || a.rounds.size() != b.rounds.size()) return false;
  for (size_t i = 0; i < a.rounds.size(); ++i)
    if (a.rounds[i].begin != b.rounds[i].begin || a.rounds[i].comm_begin != b.rounds[i].comm_begin ||
        a.rounds[i].end != b.rounds[i].end)
      return false;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const Step& x = a.steps[i];
    const Step& y = b.steps[i];
    if (x.kind != y.kind || x.bytes != y.bytes || x.msg_index != y.msg_index) return false;
    const int moved = s == Symmetry::Xor ? x.peer ^ shift : (x.peer + shift) % p;
    if (x.is_communication() && moved != y.peer) return false;
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
    // A one-node schedule through the segment has no other node to stand
    // for; across nodes, flags stay inside a node and move with it.
    if (reps.schedules.back().uses_shared && nodes == 1) {
      reps.error = "shared-memory steps on one node";
      return reps;
    }
  }
  // Which symmetry holds: moving by whole nodes, or (powers of two) xor.
  auto holds = [&](Symmetry s) -> std::string {
    for (int node : {1, nodes / 2}) {
      if (node <= 0 || node >= nodes) continue;
      for (int j : {0, l - 1}) {
        const int twin = s == Symmetry::Xor ? j ^ (node * l) : node * l + j;
        const Schedule moved = build_schedule(algo, args, topo, twin);
        if (!same_but_moved(reps.schedules[static_cast<size_t>(j)], moved, node * l, p, s))
          return str("rank ", twin, " does not do what rank ", j, " does, moved by ", node,
                     node == 1 ? " node" : " nodes");
      }
    }
    return "";
  };
  const bool powers_of_two = std::has_single_bit(static_cast<unsigned>(p)) &&
                             std::has_single_bit(static_cast<unsigned>(l));
  reps.error = holds(Symmetry::Shift);
  if (!reps.error.empty() && powers_of_two && holds(Symmetry::Xor).empty()) {
    reps.error.clear();
    reps.symmetry = Symmetry::Xor;
  }
  if (!reps.error.empty()) return reps;
  reps.ranks_per_node = l;
  return reps;
}

}  // namespace tutti::model
