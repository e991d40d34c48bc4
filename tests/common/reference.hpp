// Test data and reference results for every collective, computed directly
// from all ranks' inputs (no communication), shared by the simulator tests
// and the mpirun tests. Inputs are chosen so that every result is exact in
// any reduction order: small integers for sums, mostly ones for products.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/coll_args.hpp"

namespace tutti::testing {

using Bytes = std::vector<char>;

// Deterministic pseudo-random contents for rank `rank`'s input buffer of
// `bytes` bytes (whole elements of args.dtype), suited to args.op.
Bytes make_input(const CollArgs& args, int rank, int nranks, size_t bytes, uint64_t seed);

// What every rank's output buffer holds after the collective, given every
// rank's input buffer (for bcast: the root's output buffer at entry). Empty
// where the rank's output is not significant.
std::vector<Bytes> reference_outputs(const CollArgs& args, int nranks,
                                     const std::vector<Bytes>& inputs);
// The same with per-rank arguments (alltoallv: each rank has its own counts).
std::vector<Bytes> reference_outputs(const std::vector<CollArgs>& args,
                                     const std::vector<Bytes>& inputs);

// Counts and displacements (elements) of an alltoallv test: rank i sends
// count_between(i, j) elements to rank j; blocks are laid out in reverse rank
// order with one-element gaps, so displacements are neither packed nor sorted.
struct AlltoallvLayout {
  std::vector<size_t> send_counts, send_displs, recv_counts, recv_displs;
  void attach(CollArgs& args) const {
    args.send_counts = send_counts;
    args.send_displs = send_displs;
    args.recv_counts = recv_counts;
    args.recv_displs = recv_displs;
  }
};
// Rank `rank`'s layout; counts average about `base` (0 gives all-empty).
// in_place: symmetric counts (i->j equals j->i) and the send layout equal to
// the receive layout, as MPI_IN_PLACE alltoallv requires. The blocks lie in
// descending rank order with a gap after each, or, `packed`, in rank order
// without gaps (MPI programs' usual layout).
AlltoallvLayout alltoallv_layout(int rank, int nranks, size_t base, uint64_t seed,
                                 bool in_place = false, bool packed = false);

// Index of the first element that differs, or -1; `detail` describes it.
long first_difference(const Bytes& got, const Bytes& want, Datatype dt, std::string* detail);

// How many elements of `got` differ from `want` (the larger size's element
// count if the sizes differ).
long count_wrong(const Bytes& got, const Bytes& want, Datatype dt);

// Whether a call's count is per block, one block for or from each rank: its
// buffers and the bytes it moves grow as P^2, not P, which the sweeps size
// their largest cases by.
inline bool per_block(Collective coll) {
  return coll == Collective::Allgather || coll == Collective::ReduceScatter ||
         coll == Collective::Gather || coll == Collective::Scatter ||
         coll == Collective::Alltoall || coll == Collective::Alltoallv;
}

// Splitmix64: a fast, well-mixed hash for test data.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace tutti::testing
