// The cost model: an algorithm's predicted time for one call, found by
// running every rank's schedule in virtual time rather than from a formula
// per algorithm. Each message costs alpha + bytes/beta of the link it
// crosses (inside a node, or between nodes through one of the node's NICs),
// messages that share a port or a NIC queue behind each other (contention),
// a reduction costs bytes/gamma and a local copy bytes over the copy
// bandwidth. Small messages are eager (the send is done once injected);
// larger ones start when both sides have posted (rendezvous).
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "algos/registry.hpp"
#include "base/topology.hpp"
#include "engine/coll_args.hpp"
#include "model/machine.hpp"

namespace tutti::model {

struct Prediction {
  double us = 0;       // when the last rank finishes, from a common start
  std::string error;   // set when it could not be predicted (refused, too large)
  size_t messages = 0;
  size_t max_rounds = 0;
  // Simulated on one node's ranks standing for all (model/representative.hpp),
  // because running every rank's schedule would take too long.
  bool representative = false;
  // Too large to run and not symmetric: the line through two smaller
  // counts' predictions, extended (predict.cpp: extrapolate). Not exact.
  bool extrapolated = false;
};

// Predictions already made for one topology and machine, kept so that the
// extrapolations of several large sizes, which all start from the same
// smaller counts (powers of two below the step limit), run those once: at
// 16,384 ranks they were a third of the tutti-sim grid. Safe to share
// between threads; two threads may both make a missing prediction.
class PredictionMemo {
 public:
  using Key = std::tuple<const algos::Algorithm*, int, size_t, int, int, int, bool, int, size_t,
                         int, size_t>;
  static Key key(const algos::Algorithm& algo, const CollArgs& args, size_t max_steps);
  bool find(const Key& key, Prediction& out) const;
  void put(const Key& key, const Prediction& p);

 private:
  mutable std::mutex mutex_;
  std::map<Key, Prediction> known_;
};

// The steps of all ranks' schedules run exactly, at most (predict).
constexpr size_t kMaxSimulatedSteps = size_t{4} << 20;

// Across nodes, where the schedule is symmetric, one node's ranks stand for
// all (model/representative.hpp): the times of every rank's run, but where
// every node exchanges with every other at once, the time the NICs need
// rather than the up to 2x more that the run of every rank makes of
// serving simultaneous messages in rank order; and fast. Otherwise every
// rank's schedule is built and run exactly; beyond `max_steps` steps in
// all the time is extrapolated from smaller counts (affine in the size;
// `extrapolated` set), and refused (error set) where even that fails,
// rather than slow. `memo`, where given, must belong to this topology and
// machine.
Prediction predict(const algos::Algorithm& algo, const CollArgs& args, const Topology& topo,
                   const Machine& machine, size_t max_steps = kMaxSimulatedSteps,
                   PredictionMemo* memo = nullptr);

// Every rank's schedule run, whatever the symmetry (the tests check that
// every message sent is received); error set beyond `max_steps`.
Prediction predict_every_rank(const algos::Algorithm& algo, const CollArgs& args,
                              const Topology& topo, const Machine& machine,
                              size_t max_steps = kMaxSimulatedSteps);

// The same on node 0's ranks standing for all (model/representative.hpp),
// whatever the size; error set where the schedule is not symmetric.
Prediction predict_representative(const algos::Algorithm& algo, const CollArgs& args,
                                  const Topology& topo, const Machine& machine);

// A communicator of `nranks` ranks, `ranks_per_node` to a node (the last
// node may have fewer); one node gets a shared segment of the default size.
Topology model_topology(int nranks, int ranks_per_node);

}  // namespace tutti::model
