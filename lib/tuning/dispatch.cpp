#include "tuning/dispatch.hpp"

#include <cstdio>

#include "base/status.hpp"

namespace tutti {
namespace {

std::string us_text(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", us);
  return buf;
}

}  // namespace

Decision Dispatcher::select(const CollArgs& args, const std::string& forced,
                            const std::string& forced_origin) const {
  Decision d;
  // Try one candidate; true if it was taken.
  auto consider = [&](const std::string& name, const AlgoParams& params,
                      const std::string& origin) {
    const algos::Algorithm* algo = algos::find_algorithm(args.coll, name);
    if (!algo) {
      d.refused.push_back({name, origin, "no such algorithm for this collective"});
      return false;
    }
    CollArgs with_params = args;
    with_params.params = params;
    if (auto why = algo->refuse(with_params, topo_)) {
      d.refused.push_back({name, origin, *why});
      return false;
    }
    d.algorithm = algo;
    d.params = params;
    d.reason = origin;
    return true;
  };
  // A rule taken: its alternative too, where it would run the call.
  auto take_rule = [&](const TuningRule& rule) {
    if (!consider(rule.algorithm, rule.params, str("rule ", rule.origin))) return false;
    if (rule.alternative.empty()) return true;
    const algos::Algorithm* alt = algos::find_algorithm(args.coll, rule.alternative);
    CollArgs with_params = args;
    with_params.params = rule.alternative_params;
    if (alt && !alt->refuse(with_params, topo_)) {
      d.alternative = alt;
      d.alternative_params = rule.alternative_params;
    }
    return true;
  };

  if (!forced.empty() && consider(forced, args.params, forced_origin)) return d;

  // alltoallv sizes differ between ranks, and every rank must reach the
  // same decision: its rules are matched on the size the ranks agreed on
  // (base/agreed_size.hpp), 0 where they do not agree.
  const uint64_t bytes =
      args.coll == Collective::Alltoallv ? args.agreed_bytes : message_bytes(args, topo_.nranks);
  const CallShape shape{args.coll,   bytes,      topo_.nranks,       topo_.nnodes,
                        args.memory, args.dtype, topo_.shared_cores, topo_.fast_reads};
  for (const TuningRule* rule : user_.matches(shape))
    if (take_rule(*rule)) return d;
  if (model_decides(args, topo_)) {
    d.model = model_->choose(args, topo_);
    for (const ModelEstimate& e : d.model->estimates)
      if (e.error.empty() &&
          consider(std::string(e.algorithm->name), {},
                   str("model: lowest predicted time, ", us_text(e.us), " us at count ",
                       d.model->class_count)))
        return d;
  }
  for (const TuningRule* rule : builtin_tuning().matches(shape))
    if (take_rule(*rule)) return d;
  if (consider("mpi", {}, "no tutti algorithm fits")) return d;
  fail(TUTTI_ERR_UNSUPPORTED, "no algorithm can run ", describe(args));
}

}  // namespace tutti
