// "mpi": the MPI library's own collective, run by lib/algos/mpi_collective.cpp
// (MPI_Iallreduce & co. on a duplicate of the communicator). It is the CPU
// fallback for every collective and builds no schedule. It is always listed
// under its own name, so a call that falls back never claims to be a tutti
// algorithm.
#include <climits>

#include "algos/registry.hpp"
#include "base/status.hpp"

namespace tutti::algos {
namespace {

// MPI counts and displacements are ints.
Refusal refuse_large_counts(const CollArgs& a, const Topology&) {
  const size_t limit = INT_MAX;
  if (a.count > limit) return str("count ", a.count, " exceeds MPI's int range");
  if (a.coll == Collective::Alltoallv) {
    for (auto v : {a.send_counts, a.send_displs, a.recv_counts, a.recv_displs})
      for (size_t x : v)
        if (x > limit) return str("alltoallv count/displacement ", x, " exceeds MPI's int range");
  }
  return std::nullopt;
}

constexpr std::string_view kSummary = "the MPI library's own collective (fallback)";

}  // namespace

extern const Algorithm kMpiAllreduce{"mpi", Collective::Allreduce, kSummary, refuse_large_counts, nullptr};
extern const Algorithm kMpiReduce{"mpi", Collective::Reduce, kSummary, refuse_large_counts, nullptr};
extern const Algorithm kMpiBcast{"mpi", Collective::Bcast, kSummary, refuse_large_counts, nullptr};
extern const Algorithm kMpiAllgather{"mpi", Collective::Allgather, kSummary, refuse_large_counts, nullptr};
extern const Algorithm kMpiReduceScatter{"mpi", Collective::ReduceScatter, kSummary, refuse_large_counts, nullptr};
extern const Algorithm kMpiGather{"mpi", Collective::Gather, kSummary, refuse_large_counts, nullptr};
extern const Algorithm kMpiScatter{"mpi", Collective::Scatter, kSummary, refuse_large_counts, nullptr};
extern const Algorithm kMpiAlltoall{"mpi", Collective::Alltoall, kSummary, refuse_large_counts, nullptr};
extern const Algorithm kMpiAlltoallv{"mpi", Collective::Alltoallv, kSummary, refuse_large_counts, nullptr};
extern const Algorithm kMpiBarrier{"mpi", Collective::Barrier, kSummary, accept_all, nullptr};

}  // namespace tutti::algos
