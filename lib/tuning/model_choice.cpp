#include "tuning/model_choice.hpp"

#include <algorithm>
#include <bit>

#include "base/status.hpp"
#include "model/predict.hpp"

namespace tutti {

bool model_decides(const CollArgs& args, const Topology& topo) {
  if (args.memory != MemoryType::Host || args.coll == Collective::Alltoallv) return false;
  const bool measured_shape =
      topo.nnodes == 1 || (topo.nnodes <= 4 && topo.max_ranks_per_node <= 2);
  return !measured_shape;
}

std::shared_ptr<const ModelChoice> ModelChooser::choose(const CollArgs& args,
                                                        const Topology& topo) const {
  // The size class: the count rounded down to a power of two (0 stays 0).
  const int log2_count = args.count == 0 ? -1 : std::bit_width(args.count) - 1;
  const Key key{static_cast<int>(args.coll), static_cast<int>(args.dtype),
                static_cast<int>(args.op),   args.root,
                args.in_place,               log2_count};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  // Predicted without the lock, so that threads sharing the chooser
  // (tutti-sim) predict size classes at once; where two make the same, the
  // first one kept wins (they are equal).

  auto choice = std::make_shared<ModelChoice>();
  CollArgs at_class = args;
  at_class.count = log2_count < 0 ? 0 : size_t{1} << log2_count;
  at_class.params = {};
  choice->class_count = at_class.count;
  for (const algos::Algorithm* a : algos::algorithms_for(args.coll)) {
    if (a->is_mpi()) continue;
    try {
      const model::Prediction p = predict(*a, at_class, topo);
      choice->estimates.push_back({a, p.us, p.error, p.extrapolated});
    } catch (const Error& e) {  // a builder that cannot build this call
      choice->estimates.push_back({a, 0, e.what()});
    }
  }
  // Predicted ones first, fastest first; ties keep the registry's order.
  std::stable_sort(choice->estimates.begin(), choice->estimates.end(),
                   [](const ModelEstimate& x, const ModelEstimate& y) {
                     if (x.error.empty() != y.error.empty()) return x.error.empty();
                     return x.error.empty() && x.us < y.us;
                   });
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_.emplace(key, choice).first->second;
}

}  // namespace tutti
