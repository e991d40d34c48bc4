#include "algos/binomial.hpp"

#include <algorithm>

#include "algos/ring.hpp"

namespace tutti::algos {
namespace {

int virtual_rank(const BinomialTree& tree, int real) { return mod(real - tree.root, tree.nranks); }

// Calls f(first, end) for the pieces of virtual ranks [first, end) on either
// side of the cut.
template <class F>
void for_each_piece(int first, int end, int cut, F f) {
  if (first < cut && cut < end) {
    f(first, cut);
    f(cut, end);
  } else {
    f(first, end);
  }
}

}  // namespace

size_t binomial_segment_bytes(const ScheduleBuilder& b) {
  const size_t es = b.elem_size();
  return std::max(chunk_bytes_of(b) / es * es, es);
}

void append_binomial_bcast(ScheduleBuilder& b, const BinomialTree& tree, BufRef data,
                           size_t bytes, size_t segment_bytes) {
  std::vector<int> children = tree.children();
  std::reverse(children.begin(), children.end());  // largest subtree first
  append_pipelined_bcast(b, tree.parent(), children, data, bytes, segment_bytes);
}

void append_pipelined_bcast(ScheduleBuilder& b, int parent, const std::vector<int>& children,
                            BufRef data, size_t bytes, size_t segment_bytes) {
  if (bytes == 0 || (parent < 0 && children.empty())) return;
  const size_t segments = (bytes + segment_bytes - 1) / segment_bytes;
  auto seg_bytes = [&](size_t s) { return std::min(segment_bytes, bytes - s * segment_bytes); };
  auto recv_segment = [&](size_t s) {
    b.recv(parent, data + s * segment_bytes, seg_bytes(s));
  };
  if (children.empty()) {
    // Nothing to forward: wait for every segment at once.
    for (size_t s = 0; s < segments; ++s) recv_segment(s);
    b.end_round();
    return;
  }
  if (parent >= 0) {
    recv_segment(0);
    b.end_round();
  }
  for (size_t s = 0; s < segments; ++s) {
    for (size_t j = 0; j < children.size(); ++j) {
      b.send(children[j], data + s * segment_bytes, seg_bytes(s));
      if (j == 0 && parent >= 0 && s + 1 < segments) recv_segment(s + 1);
      b.end_round();
    }
  }
}

void append_binomial_scatter(ScheduleBuilder& b, const BinomialTree& tree,
                             const BlockPartition& blocks, const BlockLocator& locate, int cut) {
  const size_t es = b.elem_size();
  const int v = tree.vrank();
  const int parent = tree.parent();
  auto bytes_of = [&](int first, int end) { return blocks.span_size(first, end - first) * es; };
  if (parent >= 0) {
    for_each_piece(v, v + tree.subtree_size(v), cut,
                   [&](int first, int end) { b.recv(parent, locate(first), bytes_of(first, end)); });
    b.end_round();
  }
  std::vector<int> children = tree.children();
  std::reverse(children.begin(), children.end());  // largest subtree first
  for (int child : children) {
    const int vc = virtual_rank(tree, child);
    for_each_piece(vc, vc + tree.subtree_size(vc), cut,
                   [&](int first, int end) { b.send(child, locate(first), bytes_of(first, end)); });
    b.end_round();
  }
}

void append_binomial_gather(ScheduleBuilder& b, const BinomialTree& tree,
                            const BlockPartition& blocks, const BlockLocator& locate, int cut) {
  const size_t es = b.elem_size();
  const int v = tree.vrank();
  const int parent = tree.parent();
  auto bytes_of = [&](int first, int end) { return blocks.span_size(first, end - first) * es; };
  for (int child : tree.children()) {
    const int vc = virtual_rank(tree, child);
    for_each_piece(vc, vc + tree.subtree_size(vc), cut,
                   [&](int first, int end) { b.recv(child, locate(first), bytes_of(first, end)); });
  }
  b.end_round();
  if (parent >= 0) {
    for_each_piece(v, v + tree.subtree_size(v), cut,
                   [&](int first, int end) { b.send(parent, locate(first), bytes_of(first, end)); });
    b.end_round();
  }
}

}  // namespace tutti::algos
