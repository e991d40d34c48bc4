// alltoall "pairwise_cma": node-aware; the blocks for ranks of other nodes
// go as messages in pairwise rounds, those for ranks of this node are read
// in place from their send buffers (cross-memory attach), while the first
// round's messages travel (a mixed round, engine/schedule.hpp).
//   Steps:    1. the ranks of each node publish their buffers to each other
//                (flags);
//             2. round k = 1..P-1 with a rank of another node at r+k or r-k
//                (the others skipped): send block r+k to r+k, receive block
//                r-k from r-k, as "pairwise"; the first such round also
//                copies block r of every node peer's input into this
//                rank's output and ends with every rank of the node telling
//                every other it is done reading (no rank returns while it
//                is read). On one node: "cma".
//             In place (Input == Output) a rank first copies its buffer to
//             scratch, which it sends from and its node peers read.
//   Traffic:  between nodes as "pairwise"; inside a node one copy of m per
//             node peer (no messages, no segment slots).
//   Scratch:  0; in place P m.
//   Rounds:   1 flag round + the pairwise rounds with another node (on
//             N nodes of L ranks: at most P-1, at least P-L).
//   Cost, N nodes of L ranks, blocks of m bytes:
//             a flag round + (P-L) (alpha_out + m beta_out), the node's
//             (L-1) copies of m under the first of them; against
//             "pairwise"'s (P-1) rounds, L-1 of them messages inside the
//             node (2 copies each through UCX's shared memory, or a
//             rendezvous).
//   Any rank count, count and topology; nodes of several ranks need their
//   segment's flag lines and cross-memory attach (refuse_node_cma).
#include "algos/cma_common.hpp"
#include "algos/node_groups.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const int p = b.nranks(), r = b.rank();
  const size_t m = a.count * b.elem_size();
  auto block = [m](int q) { return static_cast<size_t>(q) * m; };
  if (!a.in_place) b.copy(output(block(r)), input(block(r)), m);
  if (p == 1 || m == 0) return;
  BufRef src = input();
  if (a.in_place) {
    // Our output changes as blocks arrive: send and be read from a copy.
    src = b.scratch(static_cast<size_t>(p) * m);
    b.copy(src, input(), static_cast<size_t>(p) * m);
    b.publish_as_input(src);
  }
  const NodeGroups g = node_groups_of(b.topology(), r);
  std::vector<int> node_peers;  // from the next one on, so that owners are read in turn
  const std::vector<int>& node = g.my_node_ranks();
  for (size_t i = 1; i < node.size(); ++i)
    node_peers.push_back(node[(static_cast<size_t>(g.my_local) + i) % node.size()]);
  for (int q : node_peers) b.publish_buffers(q);
  for (int q : node_peers) b.learn_buffers(q);
  b.end_round();

  bool read = node_peers.empty();
  auto read_node_peers = [&] {
    for (int q : node_peers) b.peer_read(q, output(block(q)), input(block(r)), m);
    append_signal_then_wait(b, node_peers);
    read = true;
  };
  for (int k = 1; k < p; ++k) {
    const int to = (r + k) % p, from = (r - k + p) % p;
    const bool send = g.node_of(to) != g.my_node, recv = g.node_of(from) != g.my_node;
    if (!send && !recv) continue;  // the same on both sides of each message
    if (!read) {
      b.begin_mixed_round();
      read_node_peers();
    }
    if (send) b.send(to, src + block(to), m);
    if (recv) b.recv(from, output(block(from)), m);
    b.end_round();
  }
  if (!read) {
    read_node_peers();
    b.end_round();
  }
}

}  // namespace

extern const Algorithm kAlltoallPairwiseCma{
    "pairwise_cma", Collective::Alltoall,
    "node-aware: pairwise rounds between nodes, blocks inside a node read in place from the "
    "peers' buffers under the first round",
    refuse_node_cma, build};

}  // namespace tutti::algos
