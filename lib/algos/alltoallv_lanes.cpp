// The lanes of the node-aware alltoallvs (alltoallv_lanes.hpp).
#include "algos/alltoallv_lanes.hpp"

#include "base/status.hpp"

namespace tutti::algos {

AlltoallvLanes::AlltoallvLanes(ScheduleBuilder& b, size_t direct_bytes)
    : x_(alltoallv_exchange_layout(b)),
      g_(node_groups_of(b.topology(), b.comm_rank())),
      p_(static_cast<size_t>(b.nranks())),
      l_(g_.my_node_ranks().size()),
      k_(static_cast<size_t>(g_.my_local)),
      es_(b.elem_size()),
      args_(&b.args()),
      direct_bytes_(direct_bytes),
      carried_by_(l_),
      pack_of_(p_, -1) {
  bool carries = false;
  for (const int node : g_.other_nodes()) {
    const std::vector<int>& theirs = g_.ranks_of_node()[static_cast<size_t>(node)];
    for (size_t i = 0; i < theirs.size(); ++i) carried_by_[i % l_].push_back(theirs[i]);
    carries = carries || !theirs.empty();
  }
  if (carries && args_->node_send_counts.size() != l_ * p_)
    fail(TUTTI_ERR_INTERNAL, "alltoallv across nodes: ", args_->node_send_counts.size(),
         " node send counts, want ", l_ * p_);
  size_t packs_bytes = 0;
  for (const int to : carried_by_[k_]) {
    pack_of_[static_cast<size_t>(to)] = static_cast<int>(pack_at_.size());
    std::vector<size_t>& at = pack_at_.emplace_back(l_ + 1);
    for (size_t j = 0; j < l_; ++j) {
      at[j] = packs_bytes;
      packs_bytes += through_lane(j, to);
    }
    at[l_] = packs_bytes;
  }
  packs_ = b.scratch(packs_bytes);
}

size_t AlltoallvLanes::sent(size_t j, int to) const {
  const size_t t = static_cast<size_t>(to);
  return j == k_ ? x_.send_bytes[t] : args_->node_send_counts[j * p_ + t] * es_;
}

size_t AlltoallvLanes::handed(size_t from, size_t lane) const {
  size_t total = 0;
  for (const int to : carried_by_[lane]) total += through_lane(from, to);
  return total;
}

BufRef AlltoallvLanes::pack_piece(int to, size_t j) const {
  return packs_ + pack_at_[static_cast<size_t>(pack_of_[static_cast<size_t>(to)])][j];
}

void AlltoallvLanes::append_own_pieces(ScheduleBuilder& b, BufRef send_base) const {
  for (const int to : carried_by_[k_])
    if (const size_t n = through_lane(k_, to))
      b.copy(pack_piece(to, k_), send_base + x_.send_off[static_cast<size_t>(to)], n);
}

void AlltoallvLanes::append_between_nodes(ScheduleBuilder& b, BufRef send_base) const {
  auto lane_recv = [&](int from) {
    const size_t n = x_.recv_bytes[static_cast<size_t>(from)];
    return n < direct_bytes_ ? n : 0;
  };
  for (size_t m = 0; m < pack_at_.size(); ++m)
    if (const size_t n = pack_at_[m][l_] - pack_at_[m][0])
      b.send(carried_by_[k_][m], packs_ + pack_at_[m][0], n);

  // From node B the pack comes from B's rank of local index k mod |B|.
  struct Landing {
    const std::vector<int>* from;  // the node's ranks
    BufRef area;                   // scratch where it cannot land in the output
  };
  std::vector<Landing> to_copy;
  for (const int node : g_.other_nodes()) {
    const std::vector<int>& theirs = g_.ranks_of_node()[static_cast<size_t>(node)];
    const int lane = theirs[k_ % theirs.size()];
    size_t total = 0, first_off = 0;
    bool in_order = true;
    for (const int from : theirs) {
      const size_t n = lane_recv(from);
      if (!n) continue;
      const size_t off = x_.recv_off[static_cast<size_t>(from)];
      if (total == 0) first_off = off;
      else if (off != first_off + total) in_order = false;
      total += n;
    }
    if (!total) continue;
    if (in_order) {
      b.recv(lane, output(first_off), total);
    } else {
      const BufRef area = b.scratch(total);
      b.recv(lane, area, total);
      to_copy.push_back({&theirs, area});
    }
  }
  // The direct blocks, after the packs between any two ranks (a rank's
  // pack and direct block for one peer match in posting order).
  for (const int node : g_.other_nodes())
    for (const int peer : g_.ranks_of_node()[static_cast<size_t>(node)]) {
      const size_t at = static_cast<size_t>(peer);
      if (const size_t n = sent(k_, peer); n >= direct_bytes_) b.send(peer, send_base + x_.send_off[at], n);
      if (const size_t n = x_.recv_bytes[at]; n >= direct_bytes_ && n > 0)
        b.recv(peer, output(x_.recv_off[at]), n);
    }
  b.end_round();

  // Packs that arrived out of the output's order, copied into place.
  for (const Landing& land : to_copy) {
    size_t read = 0;
    for (const int from : *land.from) {
      const size_t n = lane_recv(from);
      if (n) b.copy(output(x_.recv_off[static_cast<size_t>(from)]), land.area + read, n);
      read += n;
    }
  }
}

}  // namespace tutti::algos
