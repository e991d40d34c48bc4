// In-place recursive-doubling allreduce on the ranks of the builder's
// current group (MPICH's short-message allreduce as a building block, for
// the phase between node leaders of the hierarchical algorithms).
#pragma once

#include <cstddef>

#include "engine/schedule.hpp"

namespace tutti::algos {

// Reduces `bytes` at `data` (the same place on every rank) across the group,
// leaving the result in `data` on every rank; not finalized (avg). Extra
// ranks of a non-power-of-two group fold into a partner first and get the
// result back after. Both ends of an exchange compute (lower op upper), so
// the result is bitwise identical on every rank. Ends its last round.
// Rounds: log2(pof2) exchanges (+2 with a fold). Cost: log2(P) (alpha + n
// beta + n gamma), +2 (alpha + n beta) + n gamma to fold.
void append_recursive_doubling_inplace(ScheduleBuilder& b, BufRef data, size_t bytes);

}  // namespace tutti::algos
