// bcast and reduce through one leader per node, the tree between the
// leaders as a parameter: binomial (ceil(log2 N) latencies; the root leader
// sends or receives the vector that many times) or binary, pipelined (twice
// the latencies for one segment; the vector at most twice per leader). The
// leaders' phase serves every such bcast ("leader", "leader_cma",
// "leader_shm", "binary_leader_shm"); the whole bcast and reduce with each
// node's shared segment inside it serve the *_leader_shm ones.
#pragma once

#include "algos/node_groups.hpp"
#include "engine/schedule.hpp"

namespace tutti::algos {

enum class LeaderTree { Binomial, Binary };

// The first phase of every bcast through one leader per node ("leader",
// "leader_cma", "leader_shm", "binary_leader_shm"): the leaders (the root
// on its node, the first rank elsewhere) broadcast the output between nodes
// in segments (binomial_segment_bytes). Returns this rank's node groups and
// its leader (a communicator rank) for the phase inside the node.
struct NodeLeader {
  NodeGroups groups;
  int leader;
};
NodeLeader append_bcast_between_leaders(ScheduleBuilder& b, LeaderTree tree);

// bcast: the leaders broadcast between nodes, each leader hands the vector
// to its node through the segment. With the binomial tree, beyond the flag
// lines, both at once, one slot-sized segment a round (mixed rounds):
// segment s goes through the node while segment s+1 crosses the network.
void append_leader_shm_bcast(ScheduleBuilder& b, LeaderTree tree);

// reduce: each node's vectors to its leader through the segment, then the
// leaders reduce between nodes (pipelined in segments) to the root, which
// finalizes (avg).
void append_leader_shm_reduce(ScheduleBuilder& b, LeaderTree tree);

}  // namespace tutti::algos
