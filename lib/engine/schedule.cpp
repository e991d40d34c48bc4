#include "engine/schedule.hpp"

#include <algorithm>
#include <map>

#include "base/status.hpp"
#include "node/peer_memory.hpp"
#include "node/shared_segment.hpp"
#include "transport/transport.hpp"

namespace tutti {
namespace {

constexpr size_t kScratchAlign = 64;

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

const char* kind_name(StepKind k) {
  switch (k) {
    case StepKind::Send: return "send";
    case StepKind::Recv: return "recv";
    case StepKind::RecvReduce: return "recv_reduce";
    case StepKind::Copy: return "copy";
    case StepKind::Reduce: return "reduce";
    case StepKind::Divide: return "divide";
    case StepKind::ShmSignal: return "shm_signal";
    case StepKind::ShmWait: return "shm_wait";
    case StepKind::PeerRead: return "peer_read";
  }
  return "?";
}

const char* buf_name(BufKind k) {
  switch (k) {
    case BufKind::Input: return "in";
    case BufKind::Output: return "out";
    case BufKind::Scratch: return "scratch";
    case BufKind::Shared: return "shared";
    case BufKind::Peers: return "peers";
  }
  return "?";
}

}  // namespace

size_t Schedule::message_count() const {
  return static_cast<size_t>(std::count_if(steps.begin(), steps.end(),
                                           [](const Step& s) { return s.kind == StepKind::Send; }));
}

size_t Schedule::bytes_sent() const {
  size_t total = 0;
  for (const Step& s : steps)
    if (s.kind == StepKind::Send) total += s.bytes;
  return total;
}

ScheduleBuilder::ScheduleBuilder(const CollArgs& args, int rank, int nranks,
                                 size_t shared_capacity)
    : args_(args),
      own_topo_(Topology::single_node(nranks, shared_capacity)),
      topo_(&own_topo_),
      comm_rank_(rank),
      rank_(rank),
      nranks_(nranks),
      shared_capacity_(shared_capacity) {
  sched_.dtype = args.dtype;
  sched_.op = args.op;
  sched_.nranks = nranks;
}

ScheduleBuilder::ScheduleBuilder(const CollArgs& args, int rank, const Topology& topo)
    : args_(args),
      topo_(&topo),
      comm_rank_(rank),
      rank_(rank),
      nranks_(topo.nranks),
      shared_capacity_(topo.shared_bytes) {
  sched_.dtype = args.dtype;
  sched_.op = args.op;
  sched_.nranks = topo.nranks;
}

ScheduleBuilder::GroupScope ScheduleBuilder::within(std::vector<int> members) {
  if (!members_.empty()) fail(TUTTI_ERR_INTERNAL, "schedule group scopes do not nest");
  const auto me = std::find(members.begin(), members.end(), comm_rank_);
  if (me == members.end())
    fail(TUTTI_ERR_INTERNAL, "rank ", comm_rank_, " builds steps for a group it is not in");
  for (int m : members)
    if (m < 0 || m >= topo_->nranks)
      fail(TUTTI_ERR_INTERNAL, "schedule group names rank ", m, " of ", topo_->nranks);
  // Close the round first: a round's steps all belong to one group.
  end_round();
  rank_ = static_cast<int>(me - members.begin());
  nranks_ = static_cast<int>(members.size());
  members_ = std::move(members);
  return GroupScope(*this);
}

void ScheduleBuilder::leave_group() {
  end_round();
  members_.clear();
  rank_ = comm_rank_;
  nranks_ = topo_->nranks;
}

int ScheduleBuilder::to_comm_rank(int peer) const {
  return members_.empty() ? peer : members_[static_cast<size_t>(peer)];
}

BufRef ScheduleBuilder::scratch(size_t bytes) {
  BufRef ref{BufKind::Scratch, sched_.scratch_bytes};
  sched_.scratch_bytes = align_up(sched_.scratch_bytes + bytes, kScratchAlign);
  return ref;
}

void ScheduleBuilder::check_peer(int peer) const {
  if (peer < 0 || peer >= nranks_ || peer == rank_)
    fail(TUTTI_ERR_INTERNAL, "schedule names peer ", peer, " on rank ", rank_, " of ", nranks_);
}

void ScheduleBuilder::check_elements(size_t bytes, const char* what) const {
  if (bytes % elem_size() != 0)
    fail(TUTTI_ERR_INTERNAL, what, " of ", bytes, " bytes is not a whole number of elements");
}

void ScheduleBuilder::note_shared(const Step& step) {
  for (BufRef ref : {step.dst, step.src, step.aux}) {
    if (ref.kind != BufKind::Shared) continue;
    if (ref.offset + step.bytes > shared_capacity_)
      fail(TUTTI_ERR_INTERNAL, "schedule uses shared bytes [", ref.offset, ", ",
           ref.offset + step.bytes, ") beyond the segment's ", shared_capacity_);
    sched_.uses_shared = true;
    sched_.shared_bytes = std::max(sched_.shared_bytes, ref.offset + step.bytes);
  }
}

void ScheduleBuilder::add_comm(Step step, size_t chunk_bytes) {
  ++requests_;
  check_peer(step.peer);
  step.peer = to_comm_rank(step.peer);
  note_shared(step);
  if (step.bytes == 0) return;
  start_comm(false);
  if (chunk_bytes == 0 || chunk_bytes >= step.bytes) {
    comm_.push_back(step);
    return;
  }
  // Pieces must hold whole elements so each can be reduced on arrival.
  chunk_bytes = std::max(chunk_bytes / elem_size() * elem_size(), elem_size());
  for (size_t off = 0; off < step.bytes; off += chunk_bytes) {
    Step piece = step;
    piece.bytes = std::min(chunk_bytes, step.bytes - off);
    piece.dst = step.dst + off;
    piece.src = step.src + off;
    piece.aux = step.aux + off;
    comm_.push_back(piece);
  }
}

void ScheduleBuilder::add_local(Step step) {
  ++requests_;
  if (step.bytes == 0) return;
  note_shared(step);
  if (!comm_.empty()) end_round();
  local_.push_back(step);
}

void ScheduleBuilder::send(int peer, BufRef src, size_t bytes, size_t chunk_bytes) {
  add_comm({.kind = StepKind::Send, .peer = peer, .bytes = bytes, .src = src}, chunk_bytes);
}

void ScheduleBuilder::recv(int peer, BufRef dst, size_t bytes, size_t chunk_bytes) {
  add_comm({.kind = StepKind::Recv, .peer = peer, .bytes = bytes, .dst = dst}, chunk_bytes);
}

void ScheduleBuilder::recv_reduce(int peer, BufRef dst, BufRef operand, BufRef landing,
                                  size_t bytes, size_t chunk_bytes) {
  check_elements(bytes, "recv_reduce");
  add_comm({.kind = StepKind::RecvReduce,
            .peer = peer,
            .bytes = bytes,
            .dst = dst,
            .src = operand,
            .aux = landing},
           chunk_bytes);
}

void ScheduleBuilder::signal(int peer) {
  ++requests_;
  check_peer(peer);
  start_comm(false);
  comm_.push_back({.kind = StepKind::Send, .peer = to_comm_rank(peer), .bytes = 0});
}

void ScheduleBuilder::wait_signal(int peer) {
  ++requests_;
  check_peer(peer);
  start_comm(false);
  comm_.push_back({.kind = StepKind::Recv, .peer = to_comm_rank(peer), .bytes = 0});
}

void ScheduleBuilder::shm_signal(int peer, BufRef src, size_t bytes) {
  ++requests_;
  check_peer(peer);
  check_inline(bytes);
  check_same_node(peer);
  sched_.uses_shared = true;
  start_comm(true);
  comm_.push_back(
      {.kind = StepKind::ShmSignal, .peer = to_comm_rank(peer), .bytes = bytes, .src = src});
}

void ScheduleBuilder::shm_wait(int peer, BufRef dst, size_t bytes) {
  ++requests_;
  check_peer(peer);
  check_inline(bytes);
  check_same_node(peer);
  sched_.uses_shared = true;
  start_comm(true);
  comm_.push_back(
      {.kind = StepKind::ShmWait, .peer = to_comm_rank(peer), .bytes = bytes, .dst = dst});
}

// The peer table: an entry per communicator rank, then this rank's own,
// then one per published block.
BufRef ScheduleBuilder::peer_entry(int comm_rank) {
  sched_.uses_peer_reads = true;
  sched_.peer_table_bytes = (static_cast<size_t>(topo_->nranks) + 1 +
                             sched_.published_blocks.size()) * sizeof(PeerAddresses);
  return {BufKind::Peers, static_cast<size_t>(comm_rank) * sizeof(PeerAddresses)};
}

void ScheduleBuilder::publish_buffers(int peer) {
  shm_signal(peer, peer_entry(topo_->nranks), sizeof(PeerAddresses));
}

void ScheduleBuilder::publish_block(int peer, BufRef block) {
  sched_.published_blocks.push_back(block);
  const int entry = topo_->nranks + static_cast<int>(sched_.published_blocks.size());
  shm_signal(peer, peer_entry(entry), sizeof(PeerAddresses));
}

void ScheduleBuilder::learn_buffers(int peer) {
  shm_wait(peer, peer_entry(to_comm_rank(peer)), sizeof(PeerAddresses));
}

void ScheduleBuilder::peer_read(int peer, BufRef dst, BufRef peer_src, size_t bytes) {
  check_peer(peer);
  check_same_node(peer);
  if (peer_src.kind != BufKind::Input && peer_src.kind != BufKind::Output &&
      peer_src.kind != BufKind::Scratch)
    fail(TUTTI_ERR_INTERNAL, "a peer read names a peer's ", buf_name(peer_src.kind), " buffer");
  sched_.uses_peer_reads = true;
  add_local({.kind = StepKind::PeerRead, .peer = to_comm_rank(peer), .bytes = bytes, .dst = dst,
             .src = peer_src});
}

void ScheduleBuilder::start_comm(bool flags) {
  if (!comm_.empty() && comm_flags_ != flags && !mixed_round_) end_round();
  comm_flags_ = flags;
}

void ScheduleBuilder::check_same_node(int peer) const {
  const std::vector<int>& node = topo_->node_of_rank;
  if (topo_->nnodes <= 1 || node.empty()) return;
  const int other = to_comm_rank(peer);
  if (node[static_cast<size_t>(other)] != node[static_cast<size_t>(comm_rank_)])
    fail(TUTTI_ERR_INTERNAL, "a shared-memory flag from rank ", comm_rank_, " to rank ", other,
         " on another node");
}

int ScheduleBuilder::ranks_on_my_node() const {
  const Topology& t = *topo_;
  if (t.nnodes <= 1 || t.node_of_rank.empty()) return t.nranks;
  if (t.nodes) {
    const NodeIndex& n = *t.nodes;
    return static_cast<int>(n.ranks_of_node[static_cast<size_t>(n.group_of_rank[comm_rank_])].size());
  }
  const int mine = t.node_of_rank[static_cast<size_t>(comm_rank_)];
  return static_cast<int>(std::count(t.node_of_rank.begin(), t.node_of_rank.end(), mine));
}

void ScheduleBuilder::check_inline(size_t bytes) const {
  // The segment's flag lines are laid out for the ranks of this node.
  const int p = ranks_on_my_node();
  if (bytes > SharedSegment::carry_bytes(p))
    fail(TUTTI_ERR_INTERNAL, "a shared-memory signal on ", p, " ranks carries at most ",
         SharedSegment::carry_bytes(p), " bytes, not ", bytes);
}

void ScheduleBuilder::copy(BufRef dst, BufRef src, size_t bytes) {
  if (dst == src) return;
  add_local({.kind = StepKind::Copy, .bytes = bytes, .dst = dst, .src = src});
}

void ScheduleBuilder::reduce(BufRef dst, BufRef a, BufRef b, size_t bytes) {
  check_elements(bytes, "reduce");
  add_local({.kind = StepKind::Reduce, .bytes = bytes, .dst = dst, .src = a, .aux = b});
}

void ScheduleBuilder::finalize(BufRef dst, size_t bytes) {
  if (args_.op != Op::Avg || topo_->nranks == 1 || premultiplies_average(args_, topo_->nranks))
    return;
  check_elements(bytes, "finalize");
  add_local({.kind = StepKind::Divide, .bytes = bytes, .dst = dst});
}

void ScheduleBuilder::end_round() {
  mixed_round_ = false;
  if (local_.empty() && comm_.empty()) return;
  Round round;
  round.begin = static_cast<uint32_t>(sched_.steps.size());
  sched_.steps.insert(sched_.steps.end(), local_.begin(), local_.end());
  round.comm_begin = static_cast<uint32_t>(sched_.steps.size());
  // A round's shared-memory signals go before its waits: the engine runs
  // them in step order, and two ranks each waiting before signalling the
  // other would wait forever.
  std::stable_partition(comm_.begin(), comm_.end(),
                        [](const Step& s) { return s.kind != StepKind::ShmWait; });
  sched_.steps.insert(sched_.steps.end(), comm_.begin(), comm_.end());
  round.end = static_cast<uint32_t>(sched_.steps.size());
  round.flags = std::any_of(comm_.begin(), comm_.end(), [](const Step& s) { return s.is_flag(); });
  round.messages = std::any_of(comm_.begin(), comm_.end(), [](const Step& s) { return !s.is_flag(); });
  sched_.max_comm_per_round = std::max(sched_.max_comm_per_round, round.end - round.comm_begin);
  sched_.rounds.push_back(round);
  local_.clear();
  comm_.clear();
}

void ScheduleBuilder::premultiply_input() {
  if (!premultiplies_average(args_, topo_->nranks) || sched_.rounds.empty()) return;
  const size_t bytes = buffer_shape(args_, comm_rank_, topo_->nranks).input_bytes;
  if (bytes == 0) return;
  std::vector<Step> first;
  if (args_.in_place) {
    // The input is the output buffer, which the result overwrites anyway.
    first.push_back({.kind = StepKind::Divide, .bytes = bytes, .dst = input()});
  } else {
    // Every step that read the input reads its divided copy instead (a
    // peer's Input, which a peer read names, is what that peer publishes).
    const BufRef copy = scratch(bytes);
    auto moved = [&](BufRef& r) {
      if (r.kind == BufKind::Input) r = copy + r.offset;
    };
    for (Step& s : sched_.steps) {
      moved(s.dst);
      moved(s.aux);
      if (s.kind != StepKind::PeerRead) moved(s.src);
    }
    moved(sched_.published_input);
    first.push_back({.kind = StepKind::Copy, .bytes = bytes, .dst = copy, .src = input()});
    first.push_back({.kind = StepKind::Divide, .bytes = bytes, .dst = copy});
  }
  // First in the first round, before its other local steps.
  const auto k = static_cast<uint32_t>(first.size());
  sched_.steps.insert(sched_.steps.begin(), first.begin(), first.end());
  for (size_t i = 0; i < sched_.rounds.size(); ++i) {
    Round& r = sched_.rounds[i];
    if (i > 0) r.begin += k;
    r.comm_begin += k;
    r.end += k;
  }
}

Schedule ScheduleBuilder::finish() {
  end_round();
  premultiply_input();
  // Number the messages of each (peer, direction) pair in program order: the
  // k-th send to b here matches the k-th receive from us at b.
  std::map<int, uint32_t> sent, received;
  for (Step& s : sched_.steps) {
    if (s.kind == StepKind::Send || s.kind == StepKind::Recv || s.kind == StepKind::RecvReduce)
      sched_.uses_transport = true;
    if (s.kind == StepKind::Send)
      s.msg_index = sent[s.peer]++;
    else if (s.kind == StepKind::Recv || s.kind == StepKind::RecvReduce)
      s.msg_index = received[s.peer]++;
    else
      continue;
    if (s.msg_index >= kOutOfScheduleIndex)
      fail(TUTTI_ERR_INTERNAL, "schedule of rank ", rank_, " has more than ", kOutOfScheduleIndex,
           " messages with rank ", s.peer);
  }
  return std::move(sched_);
}

std::string to_string(const Step& s) {
  auto ref = [](BufRef r) { return str(buf_name(r.kind), "+", r.offset); };
  switch (s.kind) {
    case StepKind::Send:
      return str("send ", s.bytes, "B ", ref(s.src), " -> rank ", s.peer, " #", s.msg_index);
    case StepKind::Recv:
      return str("recv ", s.bytes, "B ", ref(s.dst), " <- rank ", s.peer, " #", s.msg_index);
    case StepKind::RecvReduce:
      return str("recv_reduce ", s.bytes, "B ", ref(s.dst), " = ", ref(s.src), " op [",
                 ref(s.aux), " <- rank ", s.peer, " #", s.msg_index, "]");
    case StepKind::Copy: return str("copy ", s.bytes, "B ", ref(s.dst), " <- ", ref(s.src));
    case StepKind::Reduce:
      return str("reduce ", s.bytes, "B ", ref(s.dst), " = ", ref(s.src), " op ", ref(s.aux));
    case StepKind::Divide: return str("divide ", s.bytes, "B ", ref(s.dst));
    case StepKind::ShmSignal:
      return s.bytes ? str("shm_signal ", s.bytes, "B ", ref(s.src), " -> rank ", s.peer)
                     : str("shm_signal -> rank ", s.peer);
    case StepKind::ShmWait:
      return s.bytes ? str("shm_wait ", s.bytes, "B ", ref(s.dst), " <- rank ", s.peer)
                     : str("shm_wait <- rank ", s.peer);
    case StepKind::PeerRead:
      return str("peer_read ", s.bytes, "B ", ref(s.dst), " <- rank ", s.peer, " ", ref(s.src));
  }
  return kind_name(s.kind);
}

namespace {

struct Range {
  BufKind kind;
  size_t begin, end;
  size_t step;
  bool overlaps(const Range& o) const { return kind == o.kind && begin < o.end && o.begin < end; }
};

}  // namespace

std::optional<std::string> find_round_hazards(const Schedule& sched, size_t input_bytes,
                                              size_t output_bytes,
                                              std::optional<InPlaceLayout> in_place) {
  auto limit = [&](BufKind k) {
    switch (k) {
      case BufKind::Input: return input_bytes;
      case BufKind::Output: return output_bytes;
      case BufKind::Scratch: return sched.scratch_bytes;
      case BufKind::Shared: return sched.shared_bytes;
      case BufKind::Peers: return sched.peer_table_bytes;
    }
    return size_t{0};
  };
  auto out_of_bounds = [&](BufRef r, size_t bytes) {
    return bytes > 0 && (r.offset > limit(r.kind) || bytes > limit(r.kind) - r.offset);
  };
  for (size_t i = 0; i < sched.steps.size(); ++i) {
    const Step& s = sched.steps[i];
    bool bad = false;
    switch (s.kind) {
      case StepKind::Send:
      case StepKind::ShmSignal: bad = out_of_bounds(s.src, s.bytes); break;
      case StepKind::Recv:
      case StepKind::ShmWait:
      case StepKind::Divide: bad = out_of_bounds(s.dst, s.bytes); break;
      // The peer's buffers have the peer's sizes, which this rank does not
      // know (a root's differ): only the destination is checked.
      case StepKind::PeerRead: bad = out_of_bounds(s.dst, s.bytes); break;
      case StepKind::Copy: bad = out_of_bounds(s.dst, s.bytes) || out_of_bounds(s.src, s.bytes); break;
      case StepKind::Reduce:
      case StepKind::RecvReduce:
        bad = out_of_bounds(s.dst, s.bytes) || out_of_bounds(s.src, s.bytes) ||
              out_of_bounds(s.aux, s.bytes);
        break;
    }
    if (bad) return str("step ", i, " (", to_string(s), ") is outside its buffer");
  }
  for (const Round& round : sched.rounds) {
    std::vector<Range> writes, reads;
    for (uint32_t i = round.comm_begin; i < round.end; ++i) {
      const Step& s = sched.steps[i];
      auto range = [&](BufRef r) {
        // Aliased buffers: express both in the coordinates of the outer one.
        if (in_place && in_place->input_inside_output && r.kind == BufKind::Input)
          r = {BufKind::Output, r.offset + in_place->offset};
        if (in_place && !in_place->input_inside_output && r.kind == BufKind::Output)
          r = {BufKind::Input, r.offset + in_place->offset};
        return Range{r.kind, r.offset, r.offset + s.bytes, i};
      };
      switch (s.kind) {
        case StepKind::Send:
        case StepKind::ShmSignal: reads.push_back(range(s.src)); break;
        case StepKind::Recv:
        case StepKind::ShmWait: writes.push_back(range(s.dst)); break;
        case StepKind::RecvReduce:
          writes.push_back(range(s.aux));
          writes.push_back(range(s.dst));
          // The operand may be the destination itself (dst = dst op landing).
          if (!(s.src == s.dst)) reads.push_back(range(s.src));
          break;
        default: break;
      }
    }
    for (size_t a = 0; a < writes.size(); ++a)
      for (size_t b = a + 1; b < writes.size(); ++b)
        if (writes[a].overlaps(writes[b]) && writes[a].step != writes[b].step)
          return str("steps ", writes[a].step, " and ", writes[b].step, " (",
                     to_string(sched.steps[writes[a].step]), " / ",
                     to_string(sched.steps[writes[b].step]), ") write the same bytes in one round");
    for (const Range& w : writes)
      for (const Range& r : reads)
        if (w.overlaps(r) && w.step != r.step)
          return str("step ", r.step, " (", to_string(sched.steps[r.step]),
                     ") reads bytes that step ", w.step, " (", to_string(sched.steps[w.step]),
                     ") writes in the same round");
  }
  return std::nullopt;
}

}  // namespace tutti
