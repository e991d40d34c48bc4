// Peer arithmetic shared by the algorithms: block partitions, rings, binomial
// trees, and the fold of non-power-of-two rank counts into a power of two.
// Pure functions of (rank, nranks, ...): no transport, no buffers, tested
// exhaustively in tests/unit/test_patterns.cpp.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <vector>

namespace tutti::algos {

// Splits `count` elements into `parts` contiguous blocks of whole
// `granule`s whose sizes differ by at most one granule (the first blocks
// are the larger), the last block also taking the count % granule elements
// left over. With granule 1: sizes differ by at most one element.
struct BlockPartition {
  size_t count;
  int parts;
  size_t granule = 1;
  size_t offset(int i) const {
    if (i >= parts) return count;
    const size_t units = count / granule, ui = static_cast<size_t>(i);
    const size_t base = units / static_cast<size_t>(parts), extra = units % static_cast<size_t>(parts);
    return (ui * base + (ui < extra ? ui : extra)) * granule;
  }
  size_t size(int i) const { return offset(i + 1) - offset(i); }
  // The largest block: the first, or the last with the leftover elements.
  size_t largest() const { return parts > 0 ? std::max(size(0), size(parts - 1)) : 0; }
  // Elements of blocks [first, first + n).
  size_t span_size(int first, int n) const { return offset(first + n) - offset(first); }
  // offset(i) for i = 0..parts, summed up instead of divided out per block:
  // O(parts) where the loop over offset(i) divides parts times (at 16,384
  // ranks tutti-sim builds thousands of such partitions).
  std::vector<size_t> offsets() const {
    std::vector<size_t> out(static_cast<size_t>(std::max(parts, 0)) + 1);
    if (parts > 0) {
      const size_t units = count / granule, n = static_cast<size_t>(parts);
      const size_t base = units / n, extra = units % n;
      size_t at = 0;  // in granules
      for (size_t i = 0; i < n; ++i) {
        out[i] = at * granule;
        at += base + (i < extra ? 1 : 0);
      }
    }
    out.back() = count;  // the last block takes the leftover elements
    return out;
  }
};

// Blocks of a vector of `elem_size`-byte elements that start 16 bytes
// apart (whole 16-byte packs where the element size divides 16), so that
// every block of a 16-byte-aligned buffer is 16-byte aligned too: device
// reductions then take their vector path (lib/cuda/elementwise.hpp), and
// the host's vector loops their aligned one.
inline constexpr size_t kBlockAlignBytes = 16;
inline BlockPartition aligned_blocks(size_t count, int parts, size_t elem_size) {
  const bool divides = elem_size > 0 && elem_size <= kBlockAlignBytes && kBlockAlignBytes % elem_size == 0;
  return BlockPartition{count, parts, divides ? kBlockAlignBytes / elem_size : 1};
}

inline int mod(int a, int n) { return ((a % n) + n) % n; }

inline bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// Largest power of two <= n (n >= 1).
inline int floor_power_of_two(int n) {
  return static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
}

// Smallest k with 2^k >= n (n >= 1).
inline int ceil_log2(int n) {
  return n <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<unsigned>(n - 1)));
}

// Binomial tree rooted at `root`: rank r has virtual rank (r - root) mod n;
// the parent of virtual rank v clears v's lowest set bit; the children of v
// are v + 2^k for every 2^k below v's lowest set bit (all k for the root).
struct BinomialTree {
  int rank, nranks, root;

  int vrank() const { return mod(rank - root, nranks); }
  int real(int v) const { return (v + root) % nranks; }
  // -1 for the root.
  int parent() const {
    const int v = vrank();
    return v == 0 ? -1 : real(v & (v - 1));
  }
  // Children in order of increasing mask (1, 2, 4, ...): their full subtree
  // sizes grow, but the last one may be cut short by nranks (P=5: 1, 2, 1).
  std::vector<int> children() const {
    std::vector<int> out;
    const int v = vrank();
    for (int mask = 1; mask < nranks; mask <<= 1) {
      if (v & mask) break;
      if (v + mask < nranks) out.push_back(real(v + mask));
    }
    return out;
  }
  // Number of virtual ranks in the subtree rooted at virtual rank v:
  // [v, v + subtree_size(v)) in virtual-rank order.
  int subtree_size(int v) const {
    if (v == 0) return nranks;
    const int lowbit = v & -v;
    return v + lowbit <= nranks ? lowbit : nranks - v;
  }
};

// Binary tree rooted at `root`, heap-shaped in virtual ranks (r - root) mod
// n: the parent of v is (v - 1) / 2, its children 2v + 1 and 2v + 2. Depth
// floor(log2 n), at most two children: a pipelined broadcast moves each
// byte out of a rank at most twice, where the binomial tree's root sends it
// ceil(log2 n) times.
struct BinaryTree {
  int rank, nranks, root;

  int vrank() const { return mod(rank - root, nranks); }
  int real(int v) const { return (v + root) % nranks; }
  // -1 for the root.
  int parent() const {
    const int v = vrank();
    return v == 0 ? -1 : real((v - 1) / 2);
  }
  std::vector<int> children() const {
    std::vector<int> out;
    const int v = vrank();
    for (int c : {2 * v + 1, 2 * v + 2})
      if (c < nranks) out.push_back(real(c));
    return out;
  }
};

// Recursive doubling/halving on a non-power-of-two count: the first 2*extra
// ranks pair up (even rank r folds into r+1), leaving pof2 participants,
// renumbered 0..pof2-1. Non-participants ("folded" ranks) hand their data to
// their partner before and get the result back after.
struct PowerOfTwoFold {
  int rank, nranks;

  int pof2() const { return floor_power_of_two(nranks); }
  int extra() const { return nranks - pof2(); }
  // True for the even ranks below 2*extra: they sit out the main phase.
  bool folded() const { return rank < 2 * extra() && rank % 2 == 0; }
  // The partner a folded rank hands its data to, or a participant below
  // 2*extra takes data from; -1 for ranks outside the fold.
  int fold_partner() const {
    if (rank >= 2 * extra()) return -1;
    return rank % 2 == 0 ? rank + 1 : rank - 1;
  }
  // Participant number of this rank (-1 if folded).
  int new_rank() const {
    if (folded()) return -1;
    return rank < 2 * extra() ? rank / 2 : rank - extra();
  }
  // Real rank of participant `nr`.
  int real_rank(int nr) const { return nr < extra() ? nr * 2 + 1 : nr + extra(); }
};

}  // namespace tutti::algos
