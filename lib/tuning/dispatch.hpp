// The dispatcher: picks the algorithm for one call. Candidates, in order:
// the forced algorithm (tutti_comm_force_algorithm or TUTTI_ALGO_<COLL>),
// every matching rule of the user's tuning table (TUTTI_TUNE, then the
// cluster file), on job shapes the built-in rules were not measured on the
// algorithms by the cost model's predicted time (tuning/model_choice.hpp),
// every matching built-in rule, and finally "mpi". The first
// candidate that does not refuse the call wins; every refusal is recorded so
// that tutti-info --explain and TUTTI_DEBUG=decisions can show it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algos/registry.hpp"
#include "tuning/model_choice.hpp"
#include "tuning/table.hpp"

namespace tutti {

struct Decision {
  const algos::Algorithm* algorithm = nullptr;
  AlgoParams params;
  std::string reason;  // why this one: "forced by TUTTI_ALGO_ALLREDUCE", "rule file:3", ...
  struct Refused {
    std::string algorithm, origin, why;
  };
  std::vector<Refused> refused;  // candidates tried before, and why they refused
  // The taken rule's alternative (TuningRule::alternative), where it names
  // one that does not refuse the call: a blocking call may run it instead
  // where TUTTI_FOLLOW_STATE is on (api/state_choice.hpp).
  const algos::Algorithm* alternative = nullptr;
  AlgoParams alternative_params;
  // The cost model's predictions, where the model was asked.
  std::shared_ptr<const ModelChoice> model;
  // True when a preferred candidate refused and a later one was taken.
  bool fell_back() const { return !refused.empty(); }
};

class Dispatcher {
 public:
  Dispatcher(TuningTable user_table, Topology topology, model::Machine machine = {})
      : user_(std::move(user_table)),
        topo_(std::move(topology)),
        model_(std::make_shared<ModelChooser>(machine)) {}

  // `forced` is the algorithm name forced for this collective, or "" (with
  // `forced_origin` saying who forced it).
  Decision select(const CollArgs& args, const std::string& forced,
                  const std::string& forced_origin) const;

  const Topology& topology() const { return topo_; }
  // The cost model's prediction for one algorithm at exactly this call.
  model::Prediction predict(const algos::Algorithm& algo, const CollArgs& args) const {
    return model_->predict(algo, args, topo_);
  }
  // The shared segment's data bytes, once the communicator has one.
  void set_shared_bytes(size_t bytes) { topo_.shared_bytes = bytes; }
  void set_peer_reads(bool on) { topo_.peer_reads = on; }
  void set_fast_reads(bool fast) { topo_.fast_reads = fast; }
  const TuningTable& user_table() const { return user_; }

 private:
  TuningTable user_;
  Topology topo_;
  std::shared_ptr<ModelChooser> model_;  // shared by copies, with its cache
};

}  // namespace tutti
