// The dissemination barrier (Hensgen, Finkel & Manber) as a building block:
// in round k every rank of the current group signals rank r + 2^k and waits
// for rank r - 2^k; after ceil(log2 P) rounds every rank has (transitively)
// heard from every other. barrier "dissemination" runs it on the
// communicator, barrier "leader" on one leader per node.
#pragma once

#include "engine/schedule.hpp"

namespace tutti::algos {

void append_dissemination(ScheduleBuilder& b);

}  // namespace tutti::algos
