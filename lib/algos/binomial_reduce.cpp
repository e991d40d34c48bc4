#include "algos/binomial_reduce.hpp"

#include <algorithm>

#include "algos/ring.hpp"

namespace tutti::algos {

size_t binomial_reduce_segment_bytes(const ScheduleBuilder& b) {
  const size_t es = b.elem_size();
  return std::max(chunk_bytes_of(b) / es * es, es);
}

void append_binomial_reduce(ScheduleBuilder& b, const BinomialTree& tree, BufRef in, BufRef acc,
                            BufRef landing, size_t bytes, size_t segment_bytes) {
  append_pipelined_reduce(b, tree.parent(), tree.children(), in, acc, landing, bytes,
                          segment_bytes);
}

void append_pipelined_reduce(ScheduleBuilder& b, int parent, const std::vector<int>& children,
                             BufRef in, BufRef acc, BufRef landing, size_t bytes,
                             size_t segment_bytes) {
  const size_t segments = (bytes + segment_bytes - 1) / segment_bytes;
  auto seg_bytes = [&](size_t s) { return std::min(segment_bytes, bytes - s * segment_bytes); };
  if (children.empty()) {
    // One segment a round, as the parent takes them: a round whose sends
    // wait for the parent's later rounds would finish only after those.
    for (size_t s = 0; s < segments && parent >= 0; ++s) {
      b.send(parent, in + s * segment_bytes, seg_bytes(s));
      b.end_round();
    }
    return;
  }
  for (size_t s = 0; s < segments; ++s) {
    const size_t off = s * segment_bytes;
    for (size_t j = 0; j < children.size(); ++j) {
      // The finished previous segment goes up while this one comes in.
      if (j == 0 && s > 0 && parent >= 0)
        b.send(parent, acc + (off - segment_bytes), seg_bytes(s - 1));
      const BufRef operand = j == 0 ? in + off : acc + off;
      b.recv_reduce(children[j], acc + off, operand, landing, seg_bytes(s));
      b.end_round();
    }
  }
  if (parent >= 0 && segments > 0)
    b.send(parent, acc + (segments - 1) * segment_bytes, seg_bytes(segments - 1));
  b.end_round();
}

void append_tree_reduce(ScheduleBuilder& b, int parent, const std::vector<int>& children) {
  const CollArgs& a = b.args();
  const size_t n = a.count * b.elem_size();
  const bool is_root = b.rank() == a.root;
  if (b.nranks() == 1) {
    if (!a.in_place) b.copy(output(), input(), n);
    return;
  }
  const size_t segment = binomial_reduce_segment_bytes(b);
  BufRef acc = input(), landing = input();  // unused on leaves
  if (!children.empty()) {
    // Only the root has an output; inner ranks accumulate in scratch.
    acc = is_root ? output() : b.scratch(n);
    landing = b.scratch(std::min(segment, n));
  }
  append_pipelined_reduce(b, parent, children, input(), acc, landing, n, segment);
  if (is_root) b.finalize(output(), n);
}

}  // namespace tutti::algos
