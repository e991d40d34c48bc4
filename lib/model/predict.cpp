#include "model/predict.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.hpp"
#include "engine/schedule.hpp"
#include "model/representative.hpp"
#include "node/node_memory.hpp"

namespace tutti::model {
namespace {

// One message between two ranks: the k-th from src to dst.
struct MessageKey {
  int src, dst;
  uint32_t index;
  bool operator==(const MessageKey&) const = default;
};
// Shared-memory flags are numbered apart from messages (a schedule may
// have both between two ranks): their indices carry this bit.
constexpr uint32_t kFlagIndex = 1u << 31;

struct MessageKeyHash {
  size_t operator()(const MessageKey& k) const {
    return (static_cast<size_t>(k.src) * 0x9E3779B97F4A7C15ull) ^
           (static_cast<size_t>(k.dst) << 24) ^ k.index;
  }
};

// The side of a message that was posted first, waiting for the other.
struct Posted {
  int rank = 0;          // the (simulated) rank that posted it
  double time = 0;       // when it was posted
  double arrival = -1;   // eager send: when its data is at the receiver
  size_t reduce_bytes = 0;  // receive: bytes reduced on arrival
  bool written = false;  // send: from bytes the sender wrote earlier in the call
};

struct RankState {
  Schedule schedule;
  bool direct = false;  // a blocking call runs it on the caller's thread
  size_t round = 0;
  uint32_t outstanding = 0;
  double round_done = 0;
  double finished = -1;
  bool messages_posted = false;  // a mixed round's, before its local steps
  std::unordered_map<int, uint32_t> signals, waits;  // shared-memory flags, numbered per peer
  // The kinds of buffer (a bit per BufKind) the rank has written so far
  // in the call: a send from one of them is of bytes hot in its own
  // cache (LinkCost::written_factor).
  uint32_t written_kinds = 0;
  void wrote(const BufRef& b) { written_kinds |= 1u << static_cast<unsigned>(b.kind); }
  bool has_written(const BufRef& b) const {
    return (written_kinds >> static_cast<unsigned>(b.kind)) & 1u;
  }
};

class VirtualRun {
 public:
  // representative_l > 0: the ranks run are node 0's, of that many ranks,
  // standing for every node's (model/representative.hpp).
  VirtualRun(const Topology& topo, const Machine& m, int representative_l = 0,
             Symmetry symmetry = Symmetry::Shift)
      : topo_(topo), m_(m), rep_l_(representative_l), symmetry_(symmetry) {
    const int nodes = std::max(1, topo.nnodes);
    egress_.assign(static_cast<size_t>(nodes * m.nics_per_node), 0);
    ingress_ = egress_;
    rank_out_.assign(static_cast<size_t>(topo.nranks), 0);
    rank_in_ = rank_out_;
    // Nodes whose ranks outnumber their cores run their CPU work on a pool
    // of that many cores; elsewhere every rank has a core of its own.
    ranks_on_.assign(static_cast<size_t>(nodes), 0);
    for (int node : topo.node_of_rank) ++ranks_on_[static_cast<size_t>(node)];
    cores_.resize(static_cast<size_t>(nodes));
    for (size_t n = 0; n < cores_.size(); ++n)
      if (m.cores_per_node > 0 && ranks_on_[n] > m.cores_per_node)
        cores_[n].assign(static_cast<size_t>(m.cores_per_node), 0);
    // Nodes sharing one machine's cores (Machine::host_cores), outnumbered
    // by the job's ranks: every rank stays runnable while it waits (it
    // yields, the launcher's hint for shared cores, and sleeps only after
    // 5 ms), so the scheduler gives each its share of the cores and CPU
    // work takes ranks / cores times as long, whoever else is working.
    if (m.host_cores > 0 && topo.nranks > m.host_cores)
      stretch_ = static_cast<double>(topo.nranks) / m.host_cores;
  }

  Prediction run(std::vector<RankState>& ranks) {
    ranks_ = &ranks;
    for (size_t r = 0; r < ranks.size(); ++r) schedule_round(static_cast<int>(r), 0);
    while (!events_.empty()) {
      const auto [time, rank] = events_.top();
      events_.pop();
      post_round(rank, time);
    }
    Prediction p;
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (ranks[r].finished < 0) {
        p.error = str("rank ", r, " never finished round ", ranks[r].round,
                      " (its schedule waits for a message no rank sends)");
        return p;
      }
      // (Where ranks share cores the measured call_us stands, for the same
      // reason as a flag's cost.)
      const bool direct = ranks[r].direct && m_.direct_call_us >= 0 &&
                          own_core(static_cast<int>(r));
      p.us = std::max(p.us, ranks[r].finished + (direct ? m_.direct_call_us : m_.call_us));
      p.max_rounds = std::max(p.max_rounds, ranks[r].schedule.rounds.size());
    }
    // Representative ranks: every node sends what node 0 sends.
    p.messages = messages_ * (rep_l_ > 0 ? static_cast<size_t>(topo_.nnodes) : 1);
    return p;
  }

 private:
  using Event = std::pair<double, int>;  // (time, rank): the rank posts its round's messages

  // The round's local steps run first; its messages are posted after them
  // (a mixed round's messages before them, as the engine does, its flags
  // after them).
  void schedule_round(int rank, double start) {
    RankState& s = (*ranks_)[static_cast<size_t>(rank)];
    if (s.round == s.schedule.rounds.size()) {
      s.finished = start;
      return;
    }
    const Round& round = s.schedule.rounds[s.round];
    double local = 0;
    for (uint32_t i = round.begin; i < round.comm_begin; ++i) {
      const Step& step = s.schedule.steps[i];
      s.wrote(step.dst);
      local += static_cast<double>(step.bytes) / local_rate(rank, step);
      if (step.kind == StepKind::PeerRead) local += m_.peer_read_us;
      // Operands in the segment were written by another rank's core; a
      // result in the segment goes to lines other ranks' cores read.
      if (step.kind == StepKind::Copy || step.kind == StepKind::Reduce) {
        const int shared_operands = (step.src.kind == BufKind::Shared ? 1 : 0) +
                                    (step.kind == StepKind::Reduce && step.aux.kind == BufKind::Shared ? 1 : 0);
        local += shared_operands * m_.peer_copy_extra_us(step.bytes, node_ranks(rank));
        if (step.dst.kind == BufKind::Shared)
          local += m_.peer_write_extra_us(step.bytes, node_ranks(rank));
      }
    }
    const double locals_done = on_cpu(rank, start, local);
    if (round.flags && round.messages) {
      // One count more than its steps until the local steps are done.
      s.outstanding = round.end - round.comm_begin + 1;
      s.round_done = start;
      s.messages_posted = true;
      post_steps(rank, round, start, Post::Messages);
    }
    events_.push({locals_done, rank});
  }

  // Bytes per us of `rank`'s local step.
  double local_rate(int rank, const Step& step) const {
    switch (step.kind) {
      case StepKind::Copy:
        return m_.copy_rate(step.bytes, node_ranks(rank));
      case StepKind::PeerRead:
        // The kernel copies from the peer's pages (cross-memory attach): at
        // its calibrated rate, else as a rendezvous message inside a node
        // does, not as a memcpy.
        return m_.peer_read_bytes_per_us > 0 ? m_.peer_read_bytes_per_us : m_.intra.rate(false);
      default:
        return m_.reduce_rate(step.bytes, node_ranks(rank));
    }
  }

  void post_round(int rank, double now) {
    RankState& s = (*ranks_)[static_cast<size_t>(rank)];
    const Round& round = s.schedule.rounds[s.round];
    if (s.messages_posted) {
      s.messages_posted = false;
      post_steps(rank, round, now, Post::Flags);
      complete(rank, now);  // the local steps
      return;
    }
    s.outstanding = round.end - round.comm_begin;
    s.round_done = now;
    if (s.outstanding == 0) {
      end_round(rank);
      return;
    }
    post_steps(rank, round, now, Post::All);
  }

  enum class Post { All, Messages, Flags };
  void post_steps(int rank, const Round& round, double now, Post which) {
    RankState& s = (*ranks_)[static_cast<size_t>(rank)];
    for (uint32_t i = round.comm_begin; i < round.end; ++i) {
      const Step& step = s.schedule.steps[i];
      if ((which == Post::Messages && step.is_flag()) || (which == Post::Flags && !step.is_flag()))
        continue;
      switch (step.kind) {
        case StepKind::Send:
          post_send(rank, key(rank, step.peer, step.msg_index), step.bytes, now,
                    s.has_written(step.src));
          break;
        case StepKind::ShmSignal:
          post_send(rank, key(rank, step.peer, kFlagIndex | s.signals[step.peer]++), step.bytes, now);
          break;
        case StepKind::Recv:
          s.wrote(step.dst);
          post_recv(rank, key(step.peer, rank, step.msg_index), step.bytes, 0, now);
          break;
        case StepKind::RecvReduce:
          s.wrote(step.dst);
          post_recv(rank, key(step.peer, rank, step.msg_index), step.bytes, step.bytes, now);
          break;
        case StepKind::ShmWait:
          s.wrote(step.dst);
          post_recv(rank, key(step.peer, rank, kFlagIndex | s.waits[step.peer]++), step.bytes, 0, now);
          break;
        default:
          break;
      }
    }
  }

  // The message's name: itself, or with representative ranks, moved by
  // whole nodes so that its receiver is on node 0.
  MessageKey key(int src, int dst, uint32_t index) const {
    if (rep_l_ == 0) return {src, dst, index};
    return {moved_sender(src, dst, rep_l_, topo_.nranks, symmetry_), dst % rep_l_, index};
  }

  const LinkCost& link_of(const MessageKey& k) const {
    const bool same_node = topo_.node_of_rank[static_cast<size_t>(k.src)] ==
                           topo_.node_of_rank[static_cast<size_t>(k.dst)];
    return same_node ? m_.intra : m_.inter;
  }
  bool eager(const MessageKey& k, size_t bytes) const {
    return m_.eager(link_of(k), static_cast<double>(bytes));
  }
  bool sends_eagerly(const MessageKey& k, size_t bytes) const {
    return m_.sends_eagerly(link_of(k), static_cast<double>(bytes));
  }

  // Puts the message on its links from `depart`; returns (when the sender's
  // side is done, when the data is at the receiver). `written`: its bytes
  // are ones the sender wrote earlier in the call.
  std::pair<double, double> transfer(const MessageKey& k, size_t bytes, double depart,
                                     bool written = false) {
    ++messages_;
    const auto src = static_cast<size_t>(k.src), dst = static_cast<size_t>(k.dst);
    const bool same_node = topo_.node_of_rank[src] == topo_.node_of_rank[dst];
    const LinkCost& link = same_node ? m_.intra : m_.inter;
    double* out;
    double* in;
    if (same_node) {
      out = &rank_out_[src];
      in = &rank_in_[dst];
    } else {
      // A rank's messages leave through NIC (its index on the node) mod nics.
      // With representative ranks every node's NICs are node 0's.
      const int nics = m_.nics_per_node;
      const int src_node = rep_l_ > 0 ? 0 : topo_.node_of_rank[src];
      const int dst_node = rep_l_ > 0 ? 0 : topo_.node_of_rank[dst];
      out = &egress_[static_cast<size_t>(src_node * nics + k.src % nics)];
      in = &ingress_[static_cast<size_t>(dst_node * nics + k.dst % nics)];
    }
    const bool small = eager(k, bytes);
    const bool cached = same_node && m_.cached(bytes, node_ranks(k.src));
    const LinkCost::Line cost = link.line(static_cast<double>(bytes), small, cached);
    // A flag through the segment is a store another core sees, not a
    // message; but where ranks share cores its waiter may first have to be
    // woken, which the link's alpha, calibrated at that shape, includes.
    const bool flag = (k.index & kFlagIndex) != 0;
    const double alpha = flag && own_core(k.dst) && m_.flag_us >= 0 ? m_.flag_us : cost.alpha_us;
    // Where nodes share a machine's cores, CPUs at their share move the
    // bytes at both ends (TCP's copies into and out of the kernel too) and
    // make a message's system calls (the gap).
    const double wire = static_cast<double>(bytes) / cost.bytes_per_us *
                        (written && !small ? link.written_factor : 1.0) * stretch_;
    // The ports take the next message once these bytes are through, and
    // not before the message rate allows (inject_us).
    const double hold = std::max(flag ? 0.0 : link.inject_us * stretch_, wire);
    if (same_node) {
      // Inside a node one CPU copies the bytes (shared memory, cross-memory
      // attach) from the sender's buffer into the receiver's: both ends
      // are busy at once, and the copy waits for a core where ranks share
      // them.
      double start = std::max({depart, *out, *in});
      if (stretch_ == 1) start = on_cpu(k.dst, start, wire) - wire;  // (else in `wire`)
      *out = *in = start + hold;
      return {start + wire, start + alpha + wire};
    }
    // Between nodes the switch buffers: the bytes leave the sender's NIC
    // when it is free and enter the receiver's when they are there and it
    // is free. Held together, a message waiting for a busy receiver would
    // hold its sender's NIC too, and every later message of that NIC
    // would queue behind it (a convoy no switch makes).
    const double leave = std::max(depart, *out);
    const double enter = std::max(leave, *in);
    *out = leave + hold;
    *in = enter + hold;
    return {leave + wire, enter + alpha + wire};
  }

  // `rank` posted the send (or receive) of message k.
  void post_send(int rank, const MessageKey& k, size_t bytes, double now, bool written = false) {
    auto it = recvs_.find(k);
    if (sends_eagerly(k, bytes)) {
      const auto [sent, arrival] = transfer(k, bytes, now, written);
      complete(rank, sent);
      if (it != recvs_.end()) {
        const Posted& r = it->second;
        complete(r.rank, reduced(r.rank, std::max(arrival, r.time), r.reduce_bytes));
        recvs_.erase(it);
      } else {
        sends_[k] = Posted{rank, now, arrival, 0};
      }
      return;
    }
    if (it == recvs_.end()) {
      sends_[k] = Posted{rank, now, -1, 0, written};
      return;
    }
    const Posted r = it->second;
    recvs_.erase(it);
    const auto [sent, arrival] = transfer(k, bytes, now, written);
    (void)sent;
    complete(rank, arrival);  // rendezvous: done once delivered
    complete(r.rank, reduced(r.rank, arrival, r.reduce_bytes));
  }

  void post_recv(int rank, const MessageKey& k, size_t bytes, size_t reduce_bytes, double now) {
    auto it = sends_.find(k);
    if (it == sends_.end()) {
      recvs_[k] = Posted{rank, now, -1, reduce_bytes};
      return;
    }
    const Posted s = it->second;
    sends_.erase(it);
    if (s.arrival >= 0) {  // eager: the data is on its way or there
      complete(rank, reduced(rank, std::max(s.arrival, now), reduce_bytes));
      return;
    }
    const auto [sent, arrival] = transfer(k, bytes, now, s.written);
    (void)sent;
    complete(s.rank, arrival);
    complete(rank, reduced(rank, arrival, reduce_bytes));
  }

  // When `rank`, ready at `ready`, has reduced `bytes` that arrived.
  double reduced(int rank, double ready, size_t bytes) {
    const double rate = m_.reduce_rate(bytes, node_ranks(rank));
    return on_cpu(rank, ready, static_cast<double>(bytes) / rate);
  }

  int node_of(int rank) const { return topo_.node_of_rank[static_cast<size_t>(rank)]; }
  int node_ranks(int rank) const { return ranks_on_[static_cast<size_t>(node_of(rank))]; }
  // Whether `rank` has a core to itself.
  bool own_core(int rank) const {
    return stretch_ == 1 && cores_[static_cast<size_t>(node_of(rank))].empty();
  }

  // When CPU work of `duration` us that `rank` can start at `ready` ends: at
  // once on a core of its own; on a shared node on the core free first. A
  // list schedule in the order the work is posted, which is not always
  // time order: work posted late cannot fill an earlier idle gap of a
  // core, so a shared node may finish later than its best schedule would.
  double on_cpu(int rank, double ready, double duration) {
    if (duration <= 0) return ready;
    if (stretch_ > 1) return ready + duration * stretch_;
    auto& cores = cores_[static_cast<size_t>(node_of(rank))];
    if (cores.empty()) return ready + duration;
    double& core = *std::min_element(cores.begin(), cores.end());
    core = std::max(core, ready) + duration;
    return core;
  }

  void complete(int rank, double time) {
    RankState& s = (*ranks_)[static_cast<size_t>(rank)];
    s.round_done = std::max(s.round_done, time);
    if (--s.outstanding == 0) end_round(rank);
  }

  void end_round(int rank) {
    RankState& s = (*ranks_)[static_cast<size_t>(rank)];
    ++s.round;
    schedule_round(rank, s.round_done);
  }

  const Topology& topo_;
  const Machine& m_;
  int rep_l_ = 0;
  Symmetry symmetry_ = Symmetry::Shift;
  std::vector<RankState>* ranks_ = nullptr;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::unordered_map<MessageKey, Posted, MessageKeyHash> sends_, recvs_;
  std::vector<double> egress_, ingress_;      // per (node, NIC): busy until
  std::vector<double> rank_out_, rank_in_;    // per rank, inside a node
  // Per node: when each of its cores is free (empty: a core per rank).
  std::vector<std::vector<double>> cores_;
  double stretch_ = 1;  // Machine::host_cores: CPU work takes this much longer
  std::vector<int> ranks_on_;  // per node
  size_t messages_ = 0;
};

// Whether a blocking call of `args` runs `schedule` directly on the
// caller's thread (as Comm::plan decides; engine/direct_call.hpp).
bool runs_directly(const algos::Algorithm& algo, const CollArgs& args, const Topology& topo,
                   const Schedule& schedule) {
  return topo.shared_bytes > 0 && algo.runs_directly(args, schedule, topo.nranks);
}

// Why a prediction cannot be made at all, whatever the size.
std::optional<std::string> not_modelled(const algos::Algorithm& algo, const CollArgs& args,
                                        const Topology& topo) {
  if (algo.is_mpi()) return "the MPI library's own collective is not modelled";
  return algo.refuse(args, topo);
}

// The prediction of an algorithm that cannot be modelled here, if it cannot.
std::optional<Prediction> refused_prediction(const algos::Algorithm& algo, const CollArgs& args,
                                             const Topology& topo) {
  std::optional<std::string> why = not_modelled(algo, args, topo);
  if (!why) return std::nullopt;
  Prediction refused;
  refused.error = std::move(*why);
  return refused;
}

}  // namespace

Topology model_topology(int nranks, int ranks_per_node) {
  Topology t;
  t.nranks = nranks;
  ranks_per_node = std::max(1, std::min(ranks_per_node, nranks));
  t.nnodes = (nranks + ranks_per_node - 1) / ranks_per_node;
  t.max_ranks_per_node = ranks_per_node;
  t.node_of_rank.resize(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) t.node_of_rank[static_cast<size_t>(r)] = r / ranks_per_node;
  if (ranks_per_node > 1) t.shared_bytes = default_node_memory_bytes(ranks_per_node);  // each node's
  // Cross-memory attach, as Linux allows between a user's processes by
  // default (the single-copy algorithms need one node and it).
  t.peer_reads = t.shared_bytes > 0;
  t.index_nodes();
  return t;
}

Prediction predict_representative(const algos::Algorithm& algo, const CollArgs& args,
                                  const Topology& topo, const Machine& machine) {
  if (std::optional<Prediction> refused = refused_prediction(algo, args, topo)) {
    refused->representative = true;
    return *refused;
  }
  Prediction p;
  p.representative = true;
  Representatives reps = representatives_of(algo, args, topo);
  if (!reps.error.empty()) {
    p.error = str(topo.nranks, " ranks are too many to simulate exactly, and representative "
                  "ranks do not apply: ", reps.error);
    return p;
  }
  std::vector<RankState> ranks(reps.schedules.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].schedule = std::move(reps.schedules[r]);
    ranks[r].direct = runs_directly(algo, args, topo, ranks[r].schedule);
  }
  p = VirtualRun(topo, machine, reps.ranks_per_node, reps.symmetry).run(ranks);
  p.representative = true;
  return p;
}

namespace {

// The work of building (and running) one rank's schedule: its steps, or
// the steps its builder was asked for where more (zero-byte steps are
// dropped: a ring of 8 bytes on p ranks asks for p^2 and keeps few).
size_t work(const Schedule& s, size_t requests) { return std::max(s.steps.size(), requests); }

// The work of all p ranks' schedules, from three of them: the median times
// p (the median, because a root may do p times what the others do).
size_t estimated_work(const algos::Algorithm& algo, const CollArgs& args, const Topology& topo) {
  const int p = topo.nranks;
  size_t sampled[3];
  const int samples[3] = {0, p / 2, p - 1};
  for (int i = 0; i < 3; ++i) {
    size_t requests = 0;
    sampled[i] = work(build_schedule(algo, args, topo, samples[i], &requests), requests);
  }
  std::sort(sampled, sampled + 3);
  return sampled[1] * static_cast<size_t>(p);
}

// Every rank's schedule run; `too_large` where they would pass `max_steps`
// steps in all.
Prediction run_every_rank(const algos::Algorithm& algo, const CollArgs& args, const Topology& topo,
                          const Machine& machine, size_t max_steps,
                          const std::function<Prediction()>& too_large) {
  // Where three ranks' schedules say that all p would exceed the limit, do
  // not build towards it (at 16,384 ranks that costs seconds and gigabytes).
  if (estimated_work(algo, args, topo) > max_steps) return too_large();
  const int p = topo.nranks;
  std::vector<RankState> ranks(static_cast<size_t>(p));
  size_t total = 0;
  for (int r = 0; r < p; ++r) {
    size_t requests = 0;
    Schedule& s = ranks[static_cast<size_t>(r)].schedule;
    s = build_schedule(algo, args, topo, r, &requests);
    ranks[static_cast<size_t>(r)].direct = runs_directly(algo, args, topo, s);
    total += work(s, requests);
    if (total > max_steps) {
      ranks.clear();
      return too_large();
    }
  }
  return VirtualRun(topo, machine).run(ranks);
}

// On representative ranks where the schedule is symmetric across nodes,
// else exactly; no extrapolation. Too large and not symmetric: the error
// of predict_representative (which `predict` extrapolates from).
Prediction predict_once(const algos::Algorithm& algo, const CollArgs& args, const Topology& topo,
                        const Machine& machine, size_t max_steps) {
  if (std::optional<Prediction> refused = refused_prediction(algo, args, topo)) return *refused;
  Prediction rep;
  if (topo.nnodes > 1) {
    rep = predict_representative(algo, args, topo, machine);
    if (rep.error.empty()) return rep;
  }
  return run_every_rank(algo, args, topo, machine, max_steps, [&] {
    return topo.nnodes > 1 ? rep : predict_representative(algo, args, topo, machine);
  });
}

// predict_once through the memo, where there is one.
Prediction predict_once(const algos::Algorithm& algo, const CollArgs& args, const Topology& topo,
                        const Machine& machine, size_t max_steps, PredictionMemo* memo) {
  if (!memo) return predict_once(algo, args, topo, machine, max_steps);
  const PredictionMemo::Key key = PredictionMemo::key(algo, args, max_steps);
  Prediction p;
  if (memo->find(key, p)) return p;
  p = predict_once(algo, args, topo, machine, max_steps);
  memo->put(key, p);
  return p;
}

// Large messages of schedules too big to run exactly and not symmetric
// (rooted trees and pipelines of many chunks): once the pipeline is full
// their time grows by the same amount per chunk, so it is affine in the
// message size. Predicts at the three largest counts c/4, c/2 and c
// (halving from the call's) whose runs fit half the limit; where the two
// slopes agree within 15% (the pipeline is full by c/4), extends the line
// to the call's count, marked `extrapolated`; otherwise no prediction.
Prediction extrapolate(const algos::Algorithm& algo, const CollArgs& args, const Topology& topo,
                       const Machine& machine, size_t max_steps, const Prediction& too_large,
                       PredictionMemo* memo) {
  CollArgs at = args;
  int attempts = 3;  // runs that turned out too large after all (each costs up to the limit)
  while (at.count >= 8 && attempts > 0) {
    at.count /= 2;
    if (estimated_work(algo, at, topo) > max_steps / 2) continue;  // cheap: three ranks
    double us[3];
    size_t counts[3];
    bool too_large_still = false;
    for (int i = 0; i < 3 && !too_large_still; ++i) {
      CollArgs smaller = at;
      smaller.count = at.count >> i;
      const Prediction pr = predict_once(algo, smaller, topo, machine, max_steps / 2, memo);
      if (!pr.error.empty() && pr.representative) {  // the estimate was low: halve again
        too_large_still = true;
        --attempts;
        continue;
      }
      if (!pr.error.empty()) {
        Prediction failed = too_large;
        failed.error += str("; nor at count ", smaller.count, " (to extrapolate from): ", pr.error);
        return failed;
      }
      us[i] = pr.us;
      counts[i] = smaller.count;
    }
    if (too_large_still) continue;
    const double upper = (us[0] - us[1]) / static_cast<double>(counts[0] - counts[1]);
    const double lower = (us[1] - us[2]) / static_cast<double>(counts[1] - counts[2]);
    // 15%, not 10%: a binomial reduce of 16,384 ranks (one a node) at 512
    // KiB-2 MiB has slopes 11% apart, its 1-4 MiB ones agree within 1%, and
    // the upper slope from 2 MiB put 8 MiB within 0.4% of theirs.
    if (upper < 0 || std::abs(upper - lower) > 0.15 * upper) {
      Prediction failed = too_large;
      failed.error += str("; the time is not affine in the size at counts ", counts[2], "-",
                          counts[0], " (to extrapolate from)");
      return failed;
    }
    Prediction p;
    p.us = us[0] + upper * static_cast<double>(args.count - counts[0]);
    p.extrapolated = true;
    return p;
  }
  return too_large;
}

}  // namespace

PredictionMemo::Key PredictionMemo::key(const algos::Algorithm& algo, const CollArgs& args,
                                        size_t max_steps) {
  return {&algo,
          static_cast<int>(args.coll),
          args.count,
          static_cast<int>(args.dtype),
          static_cast<int>(args.op),
          args.root,
          args.in_place,
          static_cast<int>(args.memory),
          args.params.chunk_bytes,
          args.params.radix,
          max_steps};
}

bool PredictionMemo::find(const Key& key, Prediction& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = known_.find(key);
  if (it == known_.end()) return false;
  out = it->second;
  return true;
}

void PredictionMemo::put(const Key& key, const Prediction& p) {
  std::lock_guard<std::mutex> lock(mutex_);
  known_.emplace(key, p);
}

Prediction predict_every_rank(const algos::Algorithm& algo, const CollArgs& args,
                              const Topology& topo, const Machine& machine, size_t max_steps) {
  if (std::optional<Prediction> refused = refused_prediction(algo, args, topo)) return *refused;
  return run_every_rank(algo, args, topo, machine, max_steps, [&] {
    Prediction too_large;
    too_large.error = str(topo.nranks, " ranks' schedules pass ", max_steps, " steps");
    return too_large;
  });
}

Prediction predict(const algos::Algorithm& algo, const CollArgs& args, const Topology& topo,
                   const Machine& machine, size_t max_steps, PredictionMemo* memo) {
  Prediction p = predict_once(algo, args, topo, machine, max_steps, memo);
  // Too large to run exactly, and not symmetric.
  if (!p.error.empty() && p.representative)
    return extrapolate(algo, args, topo, machine, max_steps, p, memo);
  return p;
}

}  // namespace tutti::model
