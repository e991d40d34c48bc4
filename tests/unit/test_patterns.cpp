// Exhaustive checks of the peer arithmetic in lib/algos/patterns.hpp for every
// rank count 1..1024: every algorithm builds on these, and a wrong parent or
// partner for one rank count shows up elsewhere only as a deadlock.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <vector>

#include "algos/patterns.hpp"
#include "algos/recursive_halving.hpp"

namespace tutti::algos {
namespace {

constexpr int kMaxRanks = 1024;

// Reference definitions, written the slow and obvious way.
int ref_ceil_log2(int n) {
  int k = 0;
  long long p = 1;
  while (p < n) {
    p *= 2;
    ++k;
  }
  return k;
}

bool ref_is_power_of_two(int n) {
  for (long long p = 1; p <= n; p *= 2)
    if (p == n) return true;
  return false;
}

}  // namespace

TEST_CASE("mod is the non-negative remainder", "[patterns]") {
  for (int n = 1; n <= kMaxRanks; ++n) {
    for (int a = -3 * n; a <= 3 * n; ++a) {
      const int m = mod(a, n);
      if (m < 0 || m >= n || (a - m) % n != 0) FAIL("mod(" << a << ", " << n << ") = " << m);
    }
  }
  CHECK(mod(-1, 1) == 0);
  CHECK(mod(-2147483647, 1000) == 353);  // -2147483647 = -2147484 * 1000 + 353
  CHECK(mod(2147483647, 1000) == 647);
}

TEST_CASE("powers of two and logarithms", "[patterns]") {
  for (int n = 1; n <= (1 << 20); ++n) {
    const bool pow2 = is_power_of_two(n);
    if (pow2 != ref_is_power_of_two(n)) FAIL("is_power_of_two(" << n << ")");
    const int f = floor_power_of_two(n);
    if (!ref_is_power_of_two(f) || f > n || 2LL * f <= n)
      FAIL("floor_power_of_two(" << n << ") = " << f);
    const int c = ceil_log2(n);
    if (c != ref_ceil_log2(n)) FAIL("ceil_log2(" << n << ") = " << c);
    // 2^(c-1) < n <= 2^c
    if ((1LL << c) < n || (c > 0 && (1LL << (c - 1)) >= n)) FAIL("ceil_log2(" << n << ") bounds");
    if (pow2 != (f == n)) FAIL("floor_power_of_two(" << n << ") vs is_power_of_two");
    if (pow2 != ((1 << c) == n)) FAIL("ceil_log2(" << n << ") vs is_power_of_two");
  }
  CHECK_FALSE(is_power_of_two(0));
  CHECK_FALSE(is_power_of_two(-4));
  CHECK(ceil_log2(1) == 0);
  CHECK(ceil_log2(2) == 1);
  CHECK(ceil_log2(3) == 2);
  CHECK(floor_power_of_two(1) == 1);
  // Up to 2^30: beyond it p * 2 and 1 << k overflow int (never a rank count).
  CHECK(floor_power_of_two((1 << 29) + 1) == 1 << 29);
  CHECK(ceil_log2(1 << 30) == 30);
}

TEST_CASE("aligned blocks start 16 bytes apart and still cover the vector", "[patterns]") {
  CHECK(aligned_blocks(100, 3, 4).granule == 4);
  CHECK(aligned_blocks(100, 3, 1).granule == 16);
  CHECK(aligned_blocks(100, 3, 8).granule == 2);
  CHECK(aligned_blocks(100, 3, 3).granule == 1);  // 3 does not divide 16
  for (size_t es : {size_t{1}, size_t{2}, size_t{4}, size_t{8}})
    for (int p = 1; p <= kMaxRanks; ++p)
      for (size_t count : {size_t{0}, size_t{1}, size_t{15}, size_t{17}, size_t{97}, size_t{1031},
                           size_t{4099}, size_t{1000003}}) {
        const BlockPartition blocks = aligned_blocks(count, p, es);
        const size_t g = blocks.granule;
        INFO("count=" << count << " parts=" << p << " elem_size=" << es);
        size_t sum = 0, smallest = count, largest = 0;
        for (int i = 0; i < p; ++i) {
          REQUIRE(blocks.offset(i) == sum);
          REQUIRE(blocks.offset(i) * es % kBlockAlignBytes == 0);
          const size_t s = blocks.size(i);
          sum += s;
          // Whole granules, but for the leftover in the last block.
          if (i + 1 < p) REQUIRE(s % g == 0);
          smallest = std::min(smallest, s);
          largest = std::max(largest, s);
        }
        REQUIRE(sum == count);
        REQUIRE(blocks.offset(p) == count);
        REQUIRE(largest - smallest <= g + count % g);
        REQUIRE(blocks.largest() == largest);
        // All offsets at once (summed up rather than divided out), and
        // recursive halving's blocks, made from them.
        const std::vector<size_t> offsets = blocks.offsets();
        REQUIRE(offsets.size() == static_cast<size_t>(p) + 1);
        for (int i = 0; i <= p; ++i) REQUIRE(offsets[static_cast<size_t>(i)] == blocks.offset(i));
        const ParticipantBlocks summed = even_participant_blocks(count, p, es);
        REQUIRE(summed.bounds == offsets);
      }
}

TEST_CASE("BlockPartition covers the vector with near-equal contiguous blocks", "[patterns]") {
  for (int p = 1; p <= kMaxRanks; ++p) {
    const size_t up = static_cast<size_t>(p);
    std::vector<size_t> counts = {0, 1, 2, 3, 7, 97, up - 1, up, up + 1, 2 * up - 1, 2 * up + 3,
                                  up * up + 5, 1000003, size_t{1} << 40, (size_t{1} << 40) + 13};
    for (size_t count : counts) {
      const BlockPartition blocks{count, p};
      INFO("count=" << count << " parts=" << p);
      size_t sum = 0, smallest = count, largest = 0;
      bool ok = blocks.offset(0) == 0;
      for (int i = 0; i < p && ok; ++i) {
        const size_t s = blocks.size(i);
        // Contiguous: each block starts where the previous one ended.
        ok = blocks.offset(i) == sum;
        // The larger blocks come first.
        ok = ok && s == count / up + (static_cast<size_t>(i) < count % up ? 1 : 0);
        ok = ok && blocks.span_size(i, 1) == s && blocks.span_size(i, 0) == 0;
        sum += s;
        smallest = std::min(smallest, s);
        largest = std::max(largest, s);
        if (!ok) FAIL("block " << i);
      }
      REQUIRE(sum == count);
      REQUIRE(blocks.offset(p) == count);
      REQUIRE(largest - smallest <= 1);
      REQUIRE(blocks.span_size(0, p) == count);
      // span_size(first, n) for every first and a spread of lengths.
      for (int first = 0; first <= p; ++first) {
        for (int n : {0, 1, 2, 3, (p - first) / 2, p - first - 1, p - first}) {
          if (n < 0 || first + n > p) continue;
          size_t want = 0;
          if (n <= 3) {
            for (int i = first; i < first + n; ++i) want += blocks.size(i);
          } else {
            want = blocks.offset(first + n) - blocks.offset(first);
          }
          if (blocks.span_size(first, n) != want)
            FAIL("span_size(" << first << ", " << n << ") = " << blocks.span_size(first, n));
        }
      }
    }
  }
}

TEST_CASE("BinomialTree is a spanning tree of depth ceil(log2 P)", "[patterns]") {
  for (int p = 1; p <= kMaxRanks; ++p) {
    std::vector<int> roots = {0, 1, p / 2, p - 1, (p * 7) / 13};
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    for (int root : roots) {
      if (root >= p) continue;
      INFO("nranks=" << p << " root=" << root);
      std::vector<std::vector<int>> children(static_cast<size_t>(p));
      std::vector<int> parent_count(static_cast<size_t>(p), 0);
      for (int r = 0; r < p; ++r) {
        const BinomialTree t{r, p, root};
        REQUIRE(t.real(t.vrank()) == r);
        const int parent = t.parent();
        if (r == root) {
          REQUIRE(parent == -1);
          REQUIRE(t.vrank() == 0);
        } else {
          REQUIRE(parent >= 0);
          REQUIRE(parent < p);
          REQUIRE(parent != r);
          // The parent's virtual rank is below the child's: no cycles.
          REQUIRE(BinomialTree{parent, p, root}.vrank() < t.vrank());
        }
        children[r] = t.children();
        int previous_size = 0;
        for (int c : children[r]) {
          REQUIRE(c >= 0);
          REQUIRE(c < p);
          ++parent_count[c];
          const BinomialTree ct{c, p, root};
          // Every child names this rank as its parent.
          REQUIRE(ct.parent() == r);
          // Children come in order of increasing (full) subtree size.
          const int full = ct.vrank() - t.vrank();  // the mask: 1, 2, 4, ...
          REQUIRE(is_power_of_two(full));
          REQUIRE(full > previous_size);
          previous_size = full;
        }
      }
      // Every non-root has exactly one parent; the root none.
      for (int r = 0; r < p; ++r) REQUIRE(parent_count[r] == (r == root ? 0 : 1));

      // Walk down from the root: reaches every rank once, within the depth bound.
      std::vector<int> depth(static_cast<size_t>(p), -1);
      std::vector<int> order = {root};
      depth[root] = 0;
      for (size_t i = 0; i < order.size(); ++i) {
        const int r = order[i];
        for (int c : children[r]) {
          REQUIRE(depth[c] == -1);
          depth[c] = depth[r] + 1;
          order.push_back(c);
        }
      }
      REQUIRE(order.size() == static_cast<size_t>(p));
      const int max_depth = *std::max_element(depth.begin(), depth.end());
      REQUIRE(max_depth <= ceil_log2(p));
      // A rank's depth is the number of set bits of its virtual rank.
      for (int r = 0; r < p; ++r)
        REQUIRE(depth[r] == std::popcount(static_cast<unsigned>(BinomialTree{r, p, root}.vrank())));

      // Walking up from any rank reaches the root within the depth bound.
      for (int r = 0; r < p; ++r) {
        int at = r, steps = 0;
        while (at != root) {
          at = BinomialTree{at, p, root}.parent();
          ++steps;
          REQUIRE(steps <= ceil_log2(p));
        }
        REQUIRE(steps == depth[r]);
      }

      // subtree_size(v): 1 + the children's, and the subtree is the virtual
      // range [v, v + subtree_size(v)). Computed bottom-up (reverse BFS order).
      const BinomialTree any{root, p, root};
      std::vector<int> size(static_cast<size_t>(p), 0);
      std::vector<int> max_v(static_cast<size_t>(p), 0), min_v(static_cast<size_t>(p), 0);
      for (size_t i = order.size(); i-- > 0;) {
        const int r = order[i];
        const int v = BinomialTree{r, p, root}.vrank();
        size[r] = 1;
        min_v[r] = max_v[r] = v;
        for (int c : children[r]) {
          size[r] += size[c];
          min_v[r] = std::min(min_v[r], min_v[c]);
          max_v[r] = std::max(max_v[r], max_v[c]);
        }
        const int s = any.subtree_size(v);
        if (s != size[r]) FAIL("subtree_size(" << v << ") = " << s << ", tree has " << size[r]);
        // The same answer from a tree object of another rank, and from this one.
        REQUIRE(BinomialTree{r, p, root}.subtree_size(v) == s);
        REQUIRE(min_v[r] == v);
        REQUIRE(max_v[r] == v + s - 1);
      }
      REQUIRE(any.subtree_size(0) == p);
    }
  }
}

TEST_CASE("PowerOfTwoFold pairs the extra ranks and renumbers the rest", "[patterns]") {
  for (int p = 1; p <= kMaxRanks; ++p) {
    INFO("nranks=" << p);
    const PowerOfTwoFold any{0, p};
    const int pof2 = any.pof2(), extra = any.extra();
    REQUIRE(is_power_of_two(pof2));
    REQUIRE(pof2 <= p);
    REQUIRE(p < 2 * pof2);
    REQUIRE(pof2 + extra == p);
    REQUIRE(extra >= 0);
    REQUIRE(extra < pof2);
    std::vector<int> rank_of(static_cast<size_t>(pof2), -1);
    int participants = 0, folded = 0;
    for (int r = 0; r < p; ++r) {
      const PowerOfTwoFold f{r, p};
      REQUIRE(f.pof2() == pof2);
      REQUIRE(f.extra() == extra);
      const int partner = f.fold_partner();
      if (r < 2 * extra) {
        REQUIRE(partner >= 0);
        REQUIRE(partner < 2 * extra);
        REQUIRE(partner != r);
        const PowerOfTwoFold g{partner, p};
        REQUIRE(g.fold_partner() == r);
        // Exactly one of each pair sits out.
        REQUIRE(f.folded() != g.folded());
      } else {
        REQUIRE(partner == -1);
        REQUIRE_FALSE(f.folded());
      }
      if (f.folded()) {
        ++folded;
        REQUIRE(f.new_rank() == -1);
        REQUIRE(r % 2 == 0);
        // A folded rank's partner is a participant.
        REQUIRE(PowerOfTwoFold{partner, p}.new_rank() >= 0);
      } else {
        ++participants;
        const int nr = f.new_rank();
        REQUIRE(nr >= 0);
        REQUIRE(nr < pof2);
        REQUIRE(rank_of[nr] == -1);  // injective
        rank_of[nr] = r;
        REQUIRE(f.real_rank(nr) == r);
      }
    }
    REQUIRE(participants == pof2);
    REQUIRE(folded == extra);
    // real_rank is the inverse of new_rank over all participant numbers.
    for (int nr = 0; nr < pof2; ++nr) {
      const int r = any.real_rank(nr);
      REQUIRE(r >= 0);
      REQUIRE(r < p);
      REQUIRE(rank_of[nr] == r);
      REQUIRE(PowerOfTwoFold{r, p}.new_rank() == nr);
    }
  }
}

}  // namespace tutti::algos
