// tutti-bench --bounds: what the hardware allows, measured in the same job
// as the collectives it is compared with (these machines change speed from
// one job to the next, so a bound from another run would mislead).
//
// Two bounds:
// - The round trip of one cache line between ranks 0 and 1: rank 0 writes a
//   line, rank 1 sees it and writes another, rank 0 sees that. No exchange
//   of data between two cores can complete faster than the one-way half of
//   it, so a small allreduce on 2 ranks is judged against it.
// - A concurrent copy: every rank copies the message size from one private
//   buffer to another at the same time. Every collective that moves a
//   rank's whole message must read each input byte once and write each
//   output byte once; p ranks copying at once read and write exactly that
//   much through the same memory system. So the copy time bounds (from
//   below) allreduce, allgather, bcast, reduce_scatter and alltoall of that
//   size on one node, whatever the algorithm; time_copy / time_collective is
//   the fraction of that bound achieved.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <vector>

namespace tutti::apps {

class HardwareBounds {
 public:
  // Collective over `world`. The round trip needs ranks 0 and 1 on one node
  // (it uses an MPI shared-memory window); otherwise it is not measured.
  explicit HardwareBounds(MPI_Comm world);
  ~HardwareBounds();
  HardwareBounds(const HardwareBounds&) = delete;
  HardwareBounds& operator=(const HardwareBounds&) = delete;

  // Collective: the median of `trips` round trips, in us, on every rank;
  // nullopt where ranks 0 and 1 share no node.
  std::optional<double> round_trip_us(int trips);

  // Makes buffers for copies of `bytes` (touched, so that no page faults are
  // timed). Local.
  void prepare_copy(size_t bytes);
  // Collective (a barrier first): one copy of the prepared size on every
  // rank; returns this rank's seconds.
  double timed_copy();

 private:
  MPI_Comm world_;
  MPI_Comm pair_ = MPI_COMM_NULL;  // ranks 0 and 1 if they share a node
  MPI_Win window_ = MPI_WIN_NULL;
  volatile unsigned long* lines_ = nullptr;  // two cache lines: 0 -> 1, 1 -> 0
  std::vector<char> storage_;  // both buffers, each starting a cache line
  char* from_ = nullptr;
  char* to_ = nullptr;
  size_t copy_bytes_ = 0;
};

}  // namespace tutti::apps
