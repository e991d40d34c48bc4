// The algorithm registry: one entry per (collective, algorithm). An entry
// says what it supports (refuse() returns why not, or nothing) and builds the
// schedule for one rank. Tests and tutti-info iterate the registry, so a new
// algorithm is tested and documented the moment it is registered here.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/topology.hpp"
#include "engine/coll_args.hpp"
#include "engine/direct_call.hpp"
#include "engine/schedule.hpp"

namespace tutti::algos {

using Refusal = std::optional<std::string>;

struct Algorithm {
  std::string_view name;  // snake_case, unique per collective
  Collective coll;
  std::string_view summary;  // one line for tutti-info
  // Nothing if this algorithm can run the call, else the reason it cannot.
  Refusal (*refuse)(const CollArgs& args, const Topology& topo);
  // Appends this rank's steps. Null for "mpi": the MPI library's own collective.
  void (*build)(ScheduleBuilder& b);
  // Optional (engine/direct_call.hpp): whether a blocking call of `args` (params
  // set) on `nranks` ranks, whose schedule is `schedule`, may run
  // directly, and the run; true on success.
  bool (*direct_applies)(const CollArgs& args, const Schedule& schedule, int nranks) = nullptr;
  bool (*run_direct)(const DirectCall& call) = nullptr;
  // Whether its schedule needs CollArgs::node_send_counts (alltoallv).
  bool needs_node_counts = false;

  bool is_mpi() const { return build == nullptr; }

  // Whether a blocking call of `args` (params set), whose schedule is
  // `schedule`, runs directly on the caller's thread where the node's
  // segment is there: host buffers only, and not a premultiplied 16-bit
  // average (its schedule divides the inputs first; direct runs reduce
  // them as given). Comm::plan and the cost model both ask this.
  bool runs_directly(const CollArgs& args, const Schedule& schedule, int nranks) const {
    return run_direct && direct_applies && args.memory == MemoryType::Host &&
           !premultiplies_average(args, nranks) && direct_applies(args, schedule, nranks);
  }
};

std::span<const Algorithm> all_algorithms();
const Algorithm* find_algorithm(Collective coll, std::string_view name);
// The algorithms registered for one collective, in registry order.
std::vector<const Algorithm*> algorithms_for(Collective coll);
// "ring, tree, mpi" for error messages.
std::string algorithm_names(Collective coll);

// Refusal helper for algorithms with no restrictions.
inline Refusal accept_all(const CollArgs&, const Topology&) { return std::nullopt; }

}  // namespace tutti::algos
