// allreduce "tree": binomial-tree reduce to rank 0, then binomial-tree
// broadcast from rank 0, both pipelined in segments.
//   Steps:    reduce: a rank reduces segment s from each child in turn
//             (smallest subtree first) into its output, and sends it up while
//             segment s+1 comes in; leaves send their input at once. Rank 0
//             finalizes (avg). Broadcast: a rank receives segment s from its
//             parent while it forwards segment s-1 to all its children.
//   Results:  computed once on rank 0, then copied: bitwise identical.
//   Segments: params.chunk_bytes (default 256 KiB).
//   Scratch:  one segment (landing of a receive) on ranks with children.
//   Rounds:   about S*children + S + 2 for S segments (ceil(log2 P) children
//             at most). Cost, unpipelined: 2 ceil(log2 P) (alpha + n beta) +
//             ceil(log2 P) n gamma; pipelined, the n terms approach
//             (children + 1) n beta for large n.
//   Any rank count and count; every op. For small vectors, or large ones
//   where a tree's few hops beat a ring's 2(P-1) latency.
#include <algorithm>

#include "algos/binomial_reduce.hpp"
#include "algos/patterns.hpp"
#include "algos/registry.hpp"

namespace tutti::algos {
namespace {

// Segment s of the output travels down the tree in rounds behind s-1.
void append_pipelined_bcast(ScheduleBuilder& b, const BinomialTree& tree, BufRef buf,
                            size_t bytes, size_t segment_bytes) {
  const int parent = tree.parent();
  std::vector<int> children = tree.children();
  // Largest subtree first: its path to the last leaf is the longest.
  std::reverse(children.begin(), children.end());
  if (parent < 0 || children.empty()) {
    // The root forwards the whole vector, a leaf takes it: one round, with
    // the chunks matching the segments the other end uses.
    if (parent >= 0) b.recv(parent, buf, bytes, segment_bytes);
    for (int c : children) b.send(c, buf, bytes, segment_bytes);
    b.end_round();
    return;
  }
  const size_t segments = (bytes + segment_bytes - 1) / segment_bytes;
  auto seg_bytes = [&](size_t s) { return std::min(segment_bytes, bytes - s * segment_bytes); };
  for (size_t s = 0; s <= segments; ++s) {
    if (s < segments) b.recv(parent, buf + s * segment_bytes, seg_bytes(s));
    if (s > 0)
      for (int c : children) b.send(c, buf + (s - 1) * segment_bytes, seg_bytes(s - 1));
    b.end_round();
  }
}

void build(ScheduleBuilder& b) {
  const CollArgs& a = b.args();
  const size_t n = a.count * b.elem_size();
  if (b.nranks() == 1) {
    if (!a.in_place) b.copy(output(), input(), n);
    return;
  }
  const BinomialTree tree{b.rank(), b.nranks(), 0};
  const size_t segment = binomial_reduce_segment_bytes(b);
  const BufRef landing =
      tree.children().empty() ? output() : b.scratch(std::min(segment, n));
  append_binomial_reduce(b, tree, input(), output(), landing, n, segment);
  if (b.rank() == 0) b.finalize(output(), n);
  append_pipelined_bcast(b, tree, output(), n, segment);
}

}  // namespace

extern const Algorithm kAllreduceTree{
    "tree", Collective::Allreduce,
    "binomial reduce to rank 0 then binomial broadcast, pipelined in segments", accept_all, build};

}  // namespace tutti::algos
