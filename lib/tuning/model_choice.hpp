// Model-driven dispatch: where no measured rule covers a call, the
// algorithm with the lowest time predicted by the cost model
// (model/predict.hpp) for this communicator's shape. Predictions are made
// once per communicator and size class (the call's shape with its count
// rounded down to a power of two) and cached, so a call pays a map lookup.
// Every rank computes the same prediction from the same topology and
// machine description, so every rank picks the same algorithm.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "algos/registry.hpp"
#include "base/topology.hpp"
#include "engine/coll_args.hpp"
#include "model/machine.hpp"
#include "model/predict.hpp"

namespace tutti {

struct ModelEstimate {
  const algos::Algorithm* algorithm = nullptr;
  double us = 0;       // predicted time; meaningful where error is empty
  std::string error;   // why there is no prediction (refused, too large to simulate)
  bool extrapolated = false;  // from smaller counts (model::Prediction::extrapolated)
};

struct ModelChoice {
  size_t class_count = 0;              // the count the predictions were made at
  std::vector<ModelEstimate> estimates;  // predicted ones by time, then the others
};

// Whether the model decides calls on this communicator: the built-in rules
// were measured on one node (any rank count) and on 2-4 nodes of up to 2
// ranks (the emulated cluster of tests/cluster); beyond those shapes they
// are guesses, and the model decides where the user's table has no rule.
// Host buffers only (the model knows no device costs); not alltoallv (its
// counts differ per call and rank).
bool model_decides(const CollArgs& args, const Topology& topo);

class ModelChooser {
 public:
  explicit ModelChooser(model::Machine machine) : machine_(machine) {}

  // The predictions for the call's size class, best first (cached).
  std::shared_ptr<const ModelChoice> choose(const CollArgs& args, const Topology& topo) const;
  // One algorithm at exactly this call (not its size class), sharing the
  // runs behind the choices' extrapolations (tutti-sim's other rows).
  model::Prediction predict(const algos::Algorithm& algo, const CollArgs& args,
                            const Topology& topo) const {
    return model::predict(algo, args, topo, machine_, model::kMaxSimulatedSteps, &memo_);
  }
  const model::Machine& machine() const { return machine_; }

 private:
  using Key = std::tuple<int, int, int, int, bool, int>;  // coll, dtype, op, root, in_place, log2 count
  model::Machine machine_;
  // The runs behind extrapolated predictions, shared by the size classes
  // (a chooser serves one communicator, so one topology).
  mutable model::PredictionMemo memo_;
  mutable std::mutex mutex_;
  mutable std::map<Key, std::shared_ptr<const ModelChoice>> cache_;
};

}  // namespace tutti
