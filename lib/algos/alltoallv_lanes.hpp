// What alltoallv "hierarchical" and "hierarchical_shm" share: every rank is
// a lane. A block for rank i of another node goes first, inside its node,
// to the local rank of index i mod L (i's lane), which sends rank i all
// that its node has for it in one message (a pack: the node's blocks for i
// in local order). The two algorithms differ only in how blocks reach
// their lanes inside the node: by messages, or through the node's shared
// segment.
//
// A lane must know the sizes its neighbours hand it, and only the senders
// know them: both need CollArgs::node_send_counts (Comm exchanges them
// inside the node before a blocking call on host buffers).
#pragma once

#include <cstdint>
#include <vector>

#include "algos/alltoall_common.hpp"
#include "algos/node_groups.hpp"
#include "engine/schedule.hpp"

namespace tutti::algos {

class AlltoallvLanes {
 public:
  // Reserves the scratch of this rank's packs. Fails (TUTTI_ERR_INTERNAL)
  // where ranks of other nodes need carrying and the node's counts are
  // missing. Blocks for another node of at least `direct_bytes` skip the
  // lanes: their sender sends them straight to their rank (every rank that
  // moves a block knows its size, so all agree on which go where).
  explicit AlltoallvLanes(ScheduleBuilder& b, size_t direct_bytes = SIZE_MAX);

  const ExchangeLayout& layout() const { return x_; }
  // This node's ranks in rank order, and this rank's index among them.
  const std::vector<int>& local_ranks() const { return g_.my_node_ranks(); }
  size_t me() const { return k_; }
  // Bytes local rank j sends to communicator rank `to`.
  size_t sent(size_t j, int to) const;
  // Of those, what goes through its lane (to a rank of another node).
  size_t through_lane(size_t j, int to) const {
    const size_t n = sent(j, to);
    return n < direct_bytes_ ? n : 0;
  }
  // The ranks of other nodes that local rank `lane` carries, node by node.
  const std::vector<int>& carried_by(size_t lane) const { return carried_by_[lane]; }
  // What local rank `from` hands lane `lane`: its blocks (through_lane) for
  // carried_by(lane), in that order.
  size_t handed(size_t from, size_t lane) const;
  // Where local rank j's block lies in this rank's pack for `to` (one of
  // carried_by(me())).
  BufRef pack_piece(int to, size_t j) const;

  // This rank's own blocks for the ranks it carries, into their packs.
  void append_own_pieces(ScheduleBuilder& b, BufRef send_base) const;
  // Once the packs are complete (the caller's steps before, in the round
  // being built): sends each to its rank, receives the packs for this
  // rank, straight into the output where their blocks lie there in order
  // (the usual layout), else into scratch copied out after; and the direct
  // blocks (from `send_base`), each pair's after its pack. Ends the round.
  void append_between_nodes(ScheduleBuilder& b, BufRef send_base) const;

 private:
  ExchangeLayout x_;
  NodeGroups g_;
  size_t p_, l_, k_, es_;
  const CollArgs* args_;
  size_t direct_bytes_;
  std::vector<std::vector<int>> carried_by_;  // per local index
  // Per rank of carried_by(k_): offsets of each local rank's piece in
  // packs_, and the pack's end.
  std::vector<std::vector<size_t>> pack_at_;
  std::vector<int> pack_of_;  // per communicator rank: index into pack_at_, or -1
  BufRef packs_{};
};

}  // namespace tutti::algos
