// tutti-bench --bounds: what the hardware allows, measured in the same job
// as the collectives it is compared with (these machines change speed from
// one job to the next, so a bound from another run would mislead).
//
// Three bounds:
// - The round trip of one cache line between ranks 0 and 1: rank 0 writes a
//   line, rank 1 sees it and writes another, rank 0 sees that. No exchange
//   of data between two cores can complete faster than the one-way half of
//   it, so a small allreduce on 2 ranks is judged against it.
// - For small messages (up to kMaxExchangeBytes), a bare exchange between
//   ranks 0 and 1: each copies what it hands the other in a 2-rank call of
//   that size into shared memory, raises a flag, waits for the other's flag
//   and copies the other's bytes out. The least data motion of such a call
//   (an allreduce's reduction reads the peer's bytes as this copy does),
//   with the steps of tutti's shared-memory path and no library around
//   them: the floor for that path, where the round trip no longer is one.
//   Each trip writes a new place of kExchangePlaces, as tutti's slots move
//   from call to call (rewriting lines the peer has just read is slow).
// - A concurrent copy: every rank memcpy-ing the message size from one
//   private buffer to another at the same time. allreduce, allgather and
//   alltoall on one node must read each input byte and write each output
//   byte, the same traffic through the same memory system, so
//   time_copy / time_collective says how close to memory speed the
//   collective runs. A reference, not a strict bound: from a few MiB glibc's
//   memcpy uses non-temporal stores that bypass the cache, and a pipelined
//   algorithm whose chunks stay in cache can beat it (bcast, whose root
//   writes nothing, beats it easily).
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

  // Largest exchange measured, and the places each rank writes in turn.
  static constexpr size_t kMaxExchangeBytes = 4096;
  static constexpr size_t kExchangePlaces = 16;
  // Collective: the median of `trips` exchanges of `bytes` between ranks 0
  // and 1, in us, on every rank; nullopt where ranks 0 and 1 share no node
  // or `bytes` is 0 or above kMaxExchangeBytes.
  std::optional<double> exchange_us(size_t bytes, int trips);

  // Largest peer copy measured.
  static constexpr size_t kMaxPeerCopyBytes = 256 * 1024;
  // Both ends of a slot in the shared segment, medians in us.
  struct PeerCopy {
    double read_us;   // rank 1 copying out `bytes` that rank 0 has just written
    double write_us;  // rank 0 copying `bytes` in over the lines rank 1 has just read
  };
  // Collective: `trips` hand-overs of `bytes` from rank 0 to rank 1 through
  // one shared area (each cache line comes from the other core, both ways:
  // what a rank pays to read a peer's slot, and to write its own slot that
  // the peers read), on every rank; nullopt where ranks 0 and 1 share no
  // node or `bytes` is 0 or above kMaxPeerCopyBytes.
  std::optional<PeerCopy> peer_copy_us(size_t bytes, int trips);

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
  char* exchange_areas_ = nullptr;  // per rank, kExchangePlaces of kMaxExchangeBytes
  char* peer_area_ = nullptr;       // rank 0's, kMaxPeerCopyBytes
  std::vector<char> exchange_private_;  // this rank's source, then destination
  std::vector<char> storage_;  // both buffers, each starting a cache line
  char* from_ = nullptr;
  char* to_ = nullptr;
  size_t copy_bytes_ = 0;
};

}  // namespace tutti::apps
