// alltoallv "hierarchical_shm": alltoallv "hierarchical" (every rank a
// lane, alltoallv_lanes.hpp) with its first step through the node's shared
// segment instead of messages, as alltoall "hierarchical_shm" does.
//   Needs:    the node's send counts, as "hierarchical" (blocking calls on
//             host buffers; elsewhere it refuses across nodes).
//   Rules:    none choose it yet. On 2 x 2 emulated nodes (ranks sharing
//             cores), medians of 3 rounds, tutti / Open MPI with a barrier
//             / back to back: 64 B-256 KiB per rank 0.50-1.34 / 0.67-1.19
//             against the rule's `mpi` 0.82-1.26 / 1.06-1.83, but 2-16 MiB
//             1.23-1.35 against 0.91-1.17 (its large blocks go over UCX's
//             TCP, slower there than Open MPI's), and an alltoallv rule
//             matches every size (docs/perf/cluster-2x2-alltoallv-shm-2026-11-29.txt).
//   Steps:    1. inside each node, chunk by chunk: each rank copies what it
//                hands every other local rank j (its block for j, then its
//                blocks for the ranks of other nodes that j carries) into
//                its slot for j; the node synchronises; each rank copies
//                what every other local rank handed it out of their slots,
//                its own block to its output and the rest into its packs.
//                The chunks run through the largest of those streams, so
//                every rank of a node runs as many (nodes may differ);
//             2. as "hierarchical": each pack to its rank, one message per
//                rank of another node carried; one pack received from
//                every other node; blocks of kDirectBlockBytes and more
//                straight to their rank instead.
//   Scratch:  the packs (and a copy of the input in place).
//   Shared:   2 x L x L slots per node.
//   Cost, N nodes of L ranks, P = N L, a stream of s bytes at most:
//             ceil(s / slot) flag rounds, each block copied into and out of
//             the segment once, then alpha_out + bytes beta_out per pack:
//             N-1 messages between nodes per rank and none inside the node,
//             against "hierarchical"'s 2 (L-1) more inside it.
//   Any rank count and topology (uneven nodes, any rank order), counts and
//   displacements; in place too. On one node it refuses (nobody exchanges
//   the counts there; alltoallv "shm" is the one-node algorithm).
#include <algorithm>

#include "algos/alltoallv_lanes.hpp"
#include "algos/registry.hpp"
#include "algos/shm_common.hpp"

namespace tutti::algos {
namespace {

Refusal refuse(const CollArgs& a, const Topology& topo) {
  // Even on one node, unlike "hierarchical": every rank copies what each
  // neighbour hands it. Comm exchanges the counts only across nodes.
  if (a.node_send_counts.empty() && (!a.node_counts_exchangeable || topo.nnodes == 1))
    return "needs its node's send counts, which only blocking calls on host buffers across "
           "nodes exchange";
  if (topo.max_ranks_per_node == 1) return std::nullopt;
  if (topo.shared_bytes == 0) return "no shared-memory segment (TUTTI_SHM_BYTES=0 or unavailable)";
  const size_t chunk = a.params.chunk_bytes ? a.params.chunk_bytes : kDefaultChunkBytes;
  const size_t l = static_cast<size_t>(topo.max_ranks_per_node);
  if (shm_slot_bytes(topo.shared_bytes, topo.max_ranks_per_node, chunk, l) < kMinShmSlot)
    return str("the shared segment (", topo.shared_bytes, " bytes) is too small for ", l,
               " ranks per node");
  return std::nullopt;
}

// Blocks for another node of this size and more go straight to their rank
// (one message each, as Open MPI's alltoallv sends them): through the lanes
// they cost three more copies (into the segment, out into a pack, and the
// pack's own send), which the messages they save do not repay. On 2 x 2
// emulated nodes 2 MiB per rank (512 KiB blocks) took 1.57-1.72x Open
// MPI's time through the lanes, 1.22-1.23x sent straight; 256 KiB (64 KiB
// blocks, through the lanes) 0.50-0.74x
// (docs/perf/cluster-2x2-alltoallv-shm-2026-11-29.txt).
constexpr size_t kDirectBlockBytes = 128 * 1024;

// Pieces of a byte stream laid end to end: where each lies.
struct Piece {
  BufRef at;
  size_t bytes;
};

// Copies bytes [off, off + len) of `stream` into `slot` (into_slot), or out of it.
void copy_range(ScheduleBuilder& b, const std::vector<Piece>& stream, size_t off, size_t len,
                BufRef slot, bool into_slot) {
  size_t start = 0;
  for (const Piece& piece : stream) {
    const size_t lo = std::max(start, off), hi = std::min(start + piece.bytes, off + len);
    if (lo < hi) {
      if (into_slot) b.copy(slot + (lo - off), piece.at + (lo - start), hi - lo);
      else b.copy(piece.at + (lo - start), slot + (lo - off), hi - lo);
    }
    start += piece.bytes;
    if (start >= off + len) return;
  }
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const AlltoallvLanes lanes(b, kDirectBlockBytes);
  const ExchangeLayout& x = lanes.layout();
  const std::vector<int>& mine = lanes.local_ranks();
  const size_t l = mine.size(), k = lanes.me();
  const int me = b.comm_rank();
  auto at = [](const std::vector<size_t>& v, int rank) { return v[static_cast<size_t>(rank)]; };

  // In place the received blocks overwrite blocks still to be sent: send
  // from a copy.
  BufRef send_base = input();
  if (a.in_place) {
    send_base = b.scratch(x.send_extent());
    b.copy(send_base, output(), x.send_extent());
  } else if (const size_t own = at(x.send_bytes, me)) {
    b.copy(output(at(x.recv_off, me)), input(at(x.send_off, me)), own);
  }
  lanes.append_own_pieces(b, send_base);

  if (l > 1) {
    // What local rank `from` hands lane `lane`: its block for the lane,
    // then its blocks for the ranks the lane carries.
    auto stream_bytes = [&](size_t from, size_t lane) {
      return lanes.sent(from, mine[lane]) + lanes.handed(from, lane);
    };
    size_t longest = 0;  // the same on every rank of the node
    for (size_t from = 0; from < l; ++from)
      for (size_t lane = 0; lane < l; ++lane)
        if (from != lane) longest = std::max(longest, stream_bytes(from, lane));
    // This rank's streams to its lanes (read from its input), and its
    // lanes' streams to it (written to its output and packs).
    std::vector<std::vector<Piece>> out(l), in(l);
    for (size_t j = 0; j < l; ++j) {
      if (j == k) continue;
      const int peer = mine[j];
      out[j].push_back({send_base + at(x.send_off, peer), lanes.sent(k, peer)});
      for (const int to : lanes.carried_by(j))
        out[j].push_back({send_base + at(x.send_off, to), lanes.through_lane(k, to)});
      const size_t mine_from_j = lanes.sent(j, me);
      if (mine_from_j != at(x.recv_bytes, peer))
        fail(TUTTI_ERR_MISMATCH, "alltoallv: rank ", peer, " sends ", mine_from_j,
             " bytes to rank ", me, ", which expects ", at(x.recv_bytes, peer));
      in[j].push_back({output(at(x.recv_off, peer)), mine_from_j});
      for (const int to : lanes.carried_by(k))
        in[j].push_back({lanes.pack_piece(to, j), lanes.through_lane(j, to)});
    }
    if (longest > 0) {
      auto in_node = b.within(mine);
      const ShmSlots slots = shm_slots(b, l, longest);
      for (size_t off = 0; off < longest; off += slots.slot) {
        const int parity = b.begin_shm_chunk();
        for (size_t j = 0; j < l; ++j)
          if (j != k) copy_range(b, out[j], off, slots.slot, slots.at(parity, static_cast<int>(k), j), true);
        append_shm_sync_all(b);
        for (size_t j = 0; j < l; ++j)
          if (j != k) copy_range(b, in[j], off, slots.slot, slots.at(parity, static_cast<int>(j), k), false);
      }
    }
  }
  lanes.append_between_nodes(b, send_base);
}

}  // namespace

extern const Algorithm kAlltoallvHierarchicalShm{
    "hierarchical_shm", Collective::Alltoallv,
    "node-aware, every rank a lane: blocks for another node's rank gather at one local rank "
    "through the node's segment and cross in one message (needs the node's send counts: "
    "blocking calls)",
    refuse, build, nullptr, nullptr, /*needs_node_counts=*/true};

}  // namespace tutti::algos
