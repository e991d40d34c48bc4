// Representative ranks for the cost model: communicators too large to run
// every rank's schedule (predict.hpp's exact run stops at 40 M steps: ring
// allreduce near 3,000 ranks) are run on the ranks of one node.
//
// Where it applies: every node holds the same number L of ranks, numbered
// node by node, and the schedule is symmetric under moving every rank by
// whole nodes (rank r + dL does what rank r does, with every peer moved by
// dL too): ring, pairwise and linear exchanges, and the like. Then, all
// ranks starting together, rank r + dL does everything at the same virtual
// time as rank r, and node 0's ranks stand for all:
//   - a message from rank a to rank b is the message moved by whole nodes
//     so that its receiver is on node 0 (from a - node(b) L to b mod L);
//     node 0's ranks post both sides of every such message;
//   - a NIC of any node carries what the same NIC of node 0 carries.
// It computes the times the run of every rank computes (tests/unit/
// test_model.cpp compares the two where both are possible), with one
// difference: where messages queue for NICs, the run of every rank serves
// messages posted at the same time in rank order, so node 0's messages go
// first everywhere and other NICs wait idle behind them (alltoall of large
// blocks across nodes: up to about twice the time the NICs need to carry
// the bytes); here every node is in step, and such exchanges take the time
// the NICs need.
#pragma once

#include <string>
#include <vector>

#include "algos/registry.hpp"
#include "base/topology.hpp"
#include "engine/coll_args.hpp"
#include "engine/schedule.hpp"

namespace tutti::model {

// One rank's schedule of `algo` for the call, on a communicator of `topo`'s
// shape; `requests`, if given, gets the steps the builder was asked for
// (ScheduleBuilder::requests).
Schedule build_schedule(const algos::Algorithm& algo, const CollArgs& args, const Topology& topo,
                        int rank, size_t* requests = nullptr);

// How rank r + dL (or r xor dL) does what rank r does.
enum class Symmetry {
  Shift,  // rank r + dL, peers moved by dL (mod p): rings, pairwise, linear exchanges
  Xor,    // rank r xor dL, peers xor dL (p and L powers of two): recursive doubling/halving
};

struct Representatives {
  int ranks_per_node = 0;
  Symmetry symmetry = Symmetry::Shift;
  std::vector<Schedule> schedules;  // of ranks 0..ranks_per_node-1
  std::string error;                // why the symmetry does not hold
};

// Builds node 0's schedules and checks the symmetry on the first and last
// rank of the next node and of the middle one (same steps, same rounds,
// peers moved by the same number of ranks, or else, where p and L are
// powers of two, xor'ed with the same multiple of L). Uneven nodes, ranks not
// numbered node by node, shared-memory steps, or a rank that does
// something else than its counterpart on node 0: error set.
Representatives representatives_of(const algos::Algorithm& algo, const CollArgs& args,
                                   const Topology& topo);

// Moves a message (the k-th from src to dst) by whole nodes so that its
// receiver is on node 0, of L ranks each, p in all.
inline int moved_sender(int src, int dst, int l, int p, Symmetry s = Symmetry::Shift) {
  if (s == Symmetry::Xor) return src ^ (dst / l * l);
  const long long moved = static_cast<long long>(src) - static_cast<long long>(dst / l) * l;
  return static_cast<int>(((moved % p) + p) % p);
}

}  // namespace tutti::model
