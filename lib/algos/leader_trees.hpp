// The bcast and reduce through one leader per node with each node's shared
// segment inside it ("leader_shm", "binary_leader_shm"), the tree between
// the leaders as a parameter: binomial (ceil(log2 N) latencies; the root
// leader sends or receives the vector that many times) or binary, pipelined
// (twice the latencies for one segment; the vector at most twice per leader).
#pragma once

#include "engine/schedule.hpp"

namespace tutti::algos {

enum class LeaderTree { Binomial, Binary };

// bcast: the leaders broadcast between nodes (pipelined in segments), then
// each leader hands the vector to its node through the segment.
void append_leader_shm_bcast(ScheduleBuilder& b, LeaderTree tree);

// reduce: each node's vectors to its leader through the segment, then the
// leaders reduce between nodes (pipelined in segments) to the root, which
// finalizes (avg).
void append_leader_shm_reduce(ScheduleBuilder& b, LeaderTree tree);

}  // namespace tutti::algos
