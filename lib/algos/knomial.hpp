// The k-nomial tree of the rooted small-message algorithms (bcast and
// reduce "knomial"): binomial's generalisation to radix k. Virtual rank
// v = (rank - root) mod P; the parent of v != 0 clears v's lowest non-zero
// base-k digit; the children of v add 1..k-1 times k^l at every level l
// below that digit (every level for the root). Depth ceil(log_k P) instead
// of ceil(log2 P), at up to (k-1) children per level.
#pragma once

#include <vector>

#include "algos/patterns.hpp"

namespace tutti::algos {

struct KnomialTree {
  int rank, nranks, root, radix;

  int vrank() const { return mod(rank - root, nranks); }
  int real(int v) const { return (v + root) % nranks; }
  // -1 for the root.
  int parent() const {
    const int v = vrank();
    if (v == 0) return -1;
    int place = 1;
    while (v / place % radix == 0) place *= radix;
    return real(v - v / place % radix * place);
  }
  // Largest subtree first (highest level first).
  std::vector<int> children() const {
    const int v = vrank();
    // The levels below v's lowest non-zero digit (all of them for the root).
    int top = 1;
    while (top < nranks && (v == 0 || v / top % radix == 0)) top *= radix;
    std::vector<int> out;
    for (int place = top / radix; place >= 1; place /= radix)
      for (int d = 1; d < radix; ++d)
        if (v + d * place < nranks) out.push_back(real(v + d * place));
    return out;
  }
};

// params.radix, else 4, at least 2.
inline int knomial_radix(int param) { return param >= 2 ? param : 4; }

}  // namespace tutti::algos
