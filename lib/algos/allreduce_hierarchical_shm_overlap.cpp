// allreduce "hierarchical_shm_overlap": "hierarchical_shm" with its phases
// overlapped chunk by chunk: while lane i exchanges its slice of chunk k
// with lane i of the other nodes, its node reduces chunk k+1 and copies in
// chunk k+2, and takes chunk k-1's result out.
//   Lanes and slices as "hierarchical_shm" (L = the fewest ranks any node
//   holds; lane i < L owns slice i of each chunk).
//   Per chunk k, these steps, each in a later round than the one before:
//     in:       every rank copies chunk k into its input slot (half k % 2);
//     reduce:   lane i reduces slice i over the node's slots into its output;
//     exchange: S steps of recursive doubling between the lanes i of the N
//               nodes (S = 1 on two nodes; where N is no power of two, the
//               extra nodes' lanes fold in first and get the result last:
//               S = log2(pof2) + 2). Step s sends in one round and combines
//               what arrived (lower node first) in the next, so chunk k's
//               step s runs beside chunk k+2's step s-1;
//     result:   lane i finalizes its slice and copies it into the node's
//               result area (half k % 2);
//     out:      every rank copies the other lanes' slices out.
//   Round t (mixed: messages posted first, then the local steps while they
//   travel, then one flag to every rank of the node) holds: in of chunk t,
//   reduce of t-1, step s of t-2-2s (messages), the combine of step s of
//   t-3-2s, result of t-1-2S and out of t-2-2S (local steps). A half is
//   written again only after everyone read what it held two chunks before
//   (one flag round in between), and a last flag round lets every rank
//   finish before the next call writes the segment.
//   Cost, n bytes in K chunks of c: (K + 2S + 2) rounds of max(flags +
//   local work of one chunk, one exchange step of c/L bytes) where
//   "hierarchical_shm" pays K (2 flag rounds + local work + S exchange
//   steps): the exchanges hide the node's copies and reductions. Per rank
//   the same copies and reductions; between nodes S messages of c/L bytes
//   each way per lane and chunk (the ring of "hierarchical_shm" on many
//   nodes moves fewer bytes: 2 (N-1)/N c/L).
//   Any node count and ranks per node, uneven too. On one node there is no
//   exchange (a pipelined reduce-scatter and allgather through the
//   segment, which the one-node algorithms beat). Needs each node's
//   segment to hold L + 1 slots of at least 64 bytes per half.
#include <algorithm>

#include "algos/node_groups.hpp"
#include "algos/node_shm.hpp"
#include "algos/patterns.hpp"
#include "algos/registry.hpp"
#include "algos/shm_common.hpp"

namespace tutti::algos {
namespace {

// The blocks a lane's slice of a chunk is split into for the exchange
// between `nodes` nodes (see exchange_between_nodes).
int exchange_parts(int nodes) { return nodes <= 2 ? 1 : floor_power_of_two(nodes); }

// Chunks of 128 KiB on two nodes (the size "hierarchical_shm" measured best
// there; the built-in rule for two nodes asks for 256 KiB, which this
// algorithm measured best there, tuning/table.cpp); on more nodes large enough that the exchange's
// messages keep 16 KiB (a lane's slice over the blocks of the exchange:
// below that the model has the steps' latency outweigh the overlap, 8 x 4
// ranks at 1 MiB 1.41x hierarchical_shm's time with 128 KiB chunks, 0.95x
// with 512 KiB), up to 4 MiB; unless the call's parameters say otherwise.
size_t overlap_chunk_bytes(const CollArgs& a, const Topology& topo) {
  if (a.params.chunk_bytes) return a.params.chunk_bytes;
  const int lanes = node_groups_of(topo, 0).min_ranks_per_node;
  const size_t spread = size_t{16} * 1024 * static_cast<size_t>(lanes) *
                        static_cast<size_t>(exchange_parts(topo.nnodes));
  return std::clamp(spread, size_t{128} * 1024, size_t{4} * 1024 * 1024);
}

// The slot size: the chunk, or less where a half of the segment cannot
// hold the node's input slots and the result area.
size_t overlap_slot_bytes(const CollArgs& a, const Topology& topo) {
  const size_t chunk = std::max(overlap_chunk_bytes(a, topo), kMinShmSlot);
  if (topo.max_ranks_per_node == 1) return chunk / kMinShmSlot * kMinShmSlot;
  return shm_slot_bytes(topo.shared_bytes, topo.max_ranks_per_node + 1, chunk, 1);
}

Refusal refuse(const CollArgs& a, const Topology& topo) {
  if (Refusal r = refuse_node_shm(a, topo)) return r;
  // Beside the input slots, each half holds the result area.
  if (topo.max_ranks_per_node > 1 && overlap_slot_bytes(a, topo) < kMinShmSlot)
    return str("the shared segment (", topo.shared_bytes, " bytes) is too small for ",
               topo.max_ranks_per_node, " ranks per node");
  return std::nullopt;
}

// One step of the exchange between the nodes, as one lane takes part in it
// (the same steps for every chunk). The lane's slice of a chunk is split
// into `parts` blocks; a step sends and receives ranges of them.
struct ExchangeStep {
  int send_to = -1;            // the rank this lane sends blocks of its slice to
  int recv_from = -1;          // the rank it receives blocks from
  int send_first = 0, send_count = 0;
  int recv_first = 0, recv_count = 0;
  bool replaces = false;       // what arrives is the result (no combine)
  bool arrival_first = false;  // combine as arrival op mine (the sender's node comes first)
};

struct Exchange {
  int parts = 1;
  std::vector<ExchangeStep> steps;
};

// The exchange between the lanes `rail` (one per node, in node order) as
// the lane of node `me` takes part. Two nodes swap their slices (one step).
// More nodes: recursive halving, then recursive doubling (Rabenseifner's
// allreduce) over pof2 blocks: 2 log2(pof2) steps and 2 (pof2-1)/pof2 of
// the slice each way, against log2(pof2) steps and log2(pof2) slices for
// doubling alone; every step is hidden under the node's work on other
// chunks, the bytes are not. Where the node count is no power of two,
// nodes below 2 * extra pair up first: the even one hands its slice to the
// odd one and gets the result back at the end. Every lane has the same
// number of steps (rounds line up); a folded lane sits the middle out.
Exchange exchange_between_nodes(const std::vector<int>& rail, int me) {
  const int nodes = static_cast<int>(rail.size());
  Exchange x;
  if (nodes < 2) return x;
  const PowerOfTwoFold fold{me, nodes};
  const int pof2 = fold.pof2(), partner = fold.fold_partner();
  x.parts = exchange_parts(nodes);
  const int all = x.parts;
  if (fold.extra() > 0) {
    ExchangeStep in;
    if (fold.folded()) {
      in.send_to = rail[static_cast<size_t>(partner)];
      in.send_count = all;
    } else if (partner >= 0) {
      in.recv_from = rail[static_cast<size_t>(partner)];
      in.recv_count = all;
      in.arrival_first = true;
    }
    x.steps.push_back(in);
  }
  const int nr = fold.new_rank();
  auto peer_of = [&](int other) { return rail[static_cast<size_t>(fold.real_rank(other))]; };
  if (x.parts == 1) {  // two nodes: one swap of the whole slice
    ExchangeStep swap;
    const int other = nr ^ 1;
    swap.send_to = swap.recv_from = peer_of(other);
    swap.send_count = swap.recv_count = 1;
    swap.arrival_first = other < nr;
    x.steps.push_back(swap);
  } else {
    // Halving: keep the half of the range that holds block nr, send the
    // other, combine what arrives into the kept half.
    int lo = 0, hi = pof2;
    for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
      ExchangeStep step;
      if (!fold.folded()) {
        const int other = nr ^ mask, mid = (lo + hi) / 2;
        const bool low = (nr & mask) == 0;
        step.send_to = step.recv_from = peer_of(other);
        step.send_first = low ? mid : lo;
        step.recv_first = low ? lo : mid;
        step.send_count = step.recv_count = (hi - lo) / 2;
        step.arrival_first = other < nr;
        if (low) hi = mid;
        else lo = mid;
      }
      x.steps.push_back(step);
    }
    // Doubling: send what this lane holds reduced, receive the partner's.
    for (int mask = 1; mask < pof2; mask *= 2) {
      ExchangeStep step;
      if (!fold.folded()) {
        const int other = nr ^ mask, width = hi - lo;
        step.send_to = step.recv_from = peer_of(other);
        step.send_first = lo;
        step.send_count = step.recv_count = width;
        step.recv_first = (nr & mask) == 0 ? hi : lo - width;
        step.replaces = true;
        if ((nr & mask) == 0) hi += width;
        else lo -= width;
      }
      x.steps.push_back(step);
    }
  }
  if (fold.extra() > 0) {
    ExchangeStep out;
    if (fold.folded()) {
      out.recv_from = rail[static_cast<size_t>(partner)];
      out.recv_count = all;
      out.replaces = true;
    } else if (partner >= 0) {
      out.send_to = rail[static_cast<size_t>(partner)];
      out.send_count = all;
    }
    x.steps.push_back(out);
  }
  return x;
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t es = b.elem_size(), n = a.count * es;
  if (n == 0) return;
  const size_t slot = overlap_slot_bytes(a, b.topology());
  const NodeGroups g = node_groups_of(b.topology(), b.comm_rank());
  const std::vector<int>& node = g.my_node_ranks();
  const int lanes = g.min_ranks_per_node, local = g.my_local;
  const int node_ranks = static_cast<int>(node.size());
  const bool is_lane = local < lanes, shared_node = node_ranks > 1;
  const size_t chunks = n / slot + (n % slot != 0);
  const size_t half = shared_half_bytes(b.shared_capacity());
  if (shared_node) b.note_slot_area(static_cast<size_t>(node_ranks + 1) * slot);

  // Chunk k: where it starts, its bytes, its slice bounds, its half.
  auto offset = [&](size_t k) { return k * slot; };
  auto bytes = [&](size_t k) { return std::min(slot, n - k * slot); };
  auto slices = [&](size_t k) { return aligned_blocks(bytes(k) / es, lanes, es); };
  auto mine = [&](size_t k) { return is_lane ? slices(k).offset(local) * es : 0; };
  auto mine_bytes = [&](size_t k) { return is_lane ? slices(k).size(local) * es : 0; };
  std::vector<int> parity(chunks, 0);  // (a rank alone on its node has no segment)
  if (shared_node)
    for (size_t k = 0; k < chunks; ++k) parity[k] = b.begin_shm_chunk();
  auto input_slot = [&](size_t k, int rank) {
    return shared(static_cast<size_t>(parity[k]) * half + static_cast<size_t>(rank) * slot);
  };
  auto result_area = [&](size_t k) {
    return shared(static_cast<size_t>(parity[k]) * half + static_cast<size_t>(node_ranks) * slot);
  };

  // The exchange: every node's schedule has the same S steps (rounds line
  // up); a lane may sit some out. Step s of chunk k sends in round k+2+2s
  // and combines in the next; an arrival to combine lands in one of two
  // buffers of its step, by the parity of its round, so that a round's
  // arrivals never land where the same round's combines read.
  const Exchange x = is_lane ? exchange_between_nodes(g.rail(local), g.my_node) : Exchange{};
  // A rank that is no lane counts the steps of lane 0 (every lane has as many).
  const size_t S =
      is_lane ? x.steps.size() : exchange_between_nodes(g.rail(0), g.my_node).steps.size();
  const size_t E = std::max<size_t>(S, 1);  // rounds from reduce to result: 2E
  // Blocks [first, first + count) of this lane's slice of chunk k: where
  // they start in the slice, and their bytes.
  auto blocks_at = [&](size_t k, int first) {
    return aligned_blocks(mine_bytes(k) / es, x.parts, es).offset(first) * es;
  };
  auto blocks_bytes = [&](size_t k, int first, int count) {
    return aligned_blocks(mine_bytes(k) / es, x.parts, es).span_size(first, count) * es;
  };
  // Each step that combines gets two landings of its largest arrival (the
  // chunks are all alike but the last, whose blocks may split otherwise).
  std::vector<size_t> landing_at(x.steps.size(), 0), landing_size(x.steps.size(), 0);
  size_t landing_bytes = 0;
  for (size_t s = 0; s < x.steps.size(); ++s) {
    const ExchangeStep& st = x.steps[s];
    landing_at[s] = landing_bytes;
    if (st.recv_from >= 0 && !st.replaces)
      landing_size[s] = std::max(blocks_bytes(0, st.recv_first, st.recv_count),
                                 blocks_bytes(chunks - 1, st.recv_first, st.recv_count));
    landing_bytes += 2 * landing_size[s];
  }
  const BufRef landing = landing_bytes ? b.scratch(landing_bytes) : BufRef{};
  auto landing_of = [&](size_t k, size_t s) {
    return landing + landing_at[s] + (k + 2 * s) % 2 * landing_size[s];
  };

  // chunk_at says whether chunk t - back exists, and which it is.
  auto chunk_at = [&](size_t t, size_t back, size_t& k) {
    if (t < back || t - back >= chunks) return false;
    k = t - back;
    return true;
  };
  for (size_t t = 0; t < chunks + 2 * E + 2; ++t) {
    b.begin_mixed_round();
    size_t k = 0;
    // Local steps first (the builder ends a round at a local step that
    // follows its communication): combines, result, out, reduce, in.
    for (size_t s = 0; s < x.steps.size(); ++s) {  // combine what step s brought
      const ExchangeStep& st = x.steps[s];
      if (st.recv_from < 0 || st.replaces || !chunk_at(t, 3 + 2 * s, k)) continue;
      const size_t bytes_in = blocks_bytes(k, st.recv_first, st.recv_count);
      if (bytes_in == 0) continue;
      const BufRef into = output(offset(k) + mine(k) + blocks_at(k, st.recv_first));
      const BufRef arrived = landing_of(k, s);
      if (st.arrival_first) b.reduce(into, arrived, into, bytes_in);
      else b.reduce(into, into, arrived, bytes_in);
    }
    if (is_lane && chunk_at(t, 1 + 2 * E, k) && mine_bytes(k) > 0) {  // result
      const BufRef out = output(offset(k) + mine(k));
      b.finalize(out, mine_bytes(k));
      if (shared_node) b.copy(result_area(k) + mine(k), out, mine_bytes(k));
    }
    if (shared_node && chunk_at(t, 2 + 2 * E, k)) {  // out
      const BlockPartition s = slices(k);
      for (int i = 0; i < lanes; ++i)
        if (!(is_lane && i == local))
          b.copy(output(offset(k) + s.offset(i) * es), result_area(k) + s.offset(i) * es,
                 s.size(i) * es);
    }
    if (is_lane && chunk_at(t, 1, k) && mine_bytes(k) > 0) {  // reduce
      const BufRef out = output(offset(k) + mine(k));
      if (!shared_node) {
        b.copy(out, input(offset(k) + mine(k)), mine_bytes(k));
      } else {
        b.reduce(out, input_slot(k, 0) + mine(k), input_slot(k, 1) + mine(k), mine_bytes(k));
        for (int q = 2; q < node_ranks; ++q)
          b.reduce(out, out, input_slot(k, q) + mine(k), mine_bytes(k));
      }
    }
    if (shared_node && chunk_at(t, 0, k))  // in
      b.copy(input_slot(k, local), input(offset(k)), bytes(k));
    for (size_t s = 0; s < x.steps.size(); ++s) {  // exchange step s
      const ExchangeStep& st = x.steps[s];
      if (!chunk_at(t, 2 + 2 * s, k)) continue;
      const BufRef slice = output(offset(k) + mine(k));
      const size_t bytes_out = blocks_bytes(k, st.send_first, st.send_count);
      const size_t bytes_in = blocks_bytes(k, st.recv_first, st.recv_count);
      if (st.send_to >= 0 && bytes_out > 0)
        b.send(st.send_to, slice + blocks_at(k, st.send_first), bytes_out);
      if (st.recv_from >= 0 && bytes_in > 0)
        b.recv(st.recv_from,
               st.replaces ? slice + blocks_at(k, st.recv_first) : landing_of(k, s), bytes_in);
    }
    if (shared_node) append_signal_then_wait(b, node);
    b.end_round();
  }
}

}  // namespace

extern const Algorithm kAllreduceHierarchicalShmOverlap{
    "hierarchical_shm_overlap", Collective::Allreduce,
    "node-aware: hierarchical_shm with each chunk's exchange between the nodes (halving and "
    "doubling) overlapping the neighbouring chunks' work inside the node",
    refuse, build};

}  // namespace tutti::algos
