#include "node/read_probe.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "node/peer_memory.hpp"
#include "transport/mpi_types.hpp"

namespace tutti {
namespace {

constexpr int kWarmTrips = 2;   // per way: the places' and buffers' first touches
constexpr int kTimedTrips = 7;  // per way: an odd count, for the median
// Spins before a wait starts yielding: far more than a round trip between
// running cores, few enough that ranks sharing a core take turns.
constexpr int kSpinsBeforeYield = 20000;

using Clock = std::chrono::steady_clock;

std::atomic_ref<uint64_t> flag(char* area, int which) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(area + 64 * which));
}

// Waits until the other rank's flag reaches `value` (flags only grow).
void wait_for(char* area, int which, uint64_t value, Clock::time_point deadline, bool bounded,
              int waiting_for) {
  for (int spins = 0; flag(area, which).load(std::memory_order_acquire) < value;) {
    if (++spins < kSpinsBeforeYield) continue;
    sched_yield();
    if (bounded && Clock::now() > deadline)
      fail(TUTTI_ERR_TIMEOUT, "communicator creation: the peer-read probe timed out waiting for ",
           "node rank ", waiting_for);
  }
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

std::optional<ReadTimes> time_peer_reads(MPI_Comm node_comm, char* area, double timeout_s) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(node_comm, &rank), "MPI_Comm_rank");
  // The owner's buffer: its address and pid go to the reader.
  std::vector<char> buffer(rank < 2 ? kReadProbeBytes : 0, 1);  // touched: no fault timed
  uint64_t owner[2] = {static_cast<uint64_t>(getpid()), reinterpret_cast<uintptr_t>(buffer.data())};
  check_mpi(MPI_Bcast(owner, 2, MPI_UINT64_T, 0, node_comm), "MPI_Bcast (peer-read probe)");
  if (rank == 0) {
    flag(area, 0).store(0);
    flag(area, 1).store(0);
  }
  check_mpi(MPI_Barrier(node_comm), "MPI_Barrier (peer-read probe)");

  // Trip t moves the block from rank 0 to rank 1, by a read when t is even
  // and through place t / 2 % kReadProbePlaces of the segment when odd.
  // Rank 0 times it from the moment its block is ready (its data in its
  // cache, as a caller's just-computed buffer is) to rank 1's flag: the
  // same flag round trip both ways, plus the copies that differ.
  double result[3] = {0, 0, 1};  // read_us, segment_us, all reads succeeded
  if (rank < 2) {
    const Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(timeout_s > 0 ? timeout_s : 0));
    const bool bounded = timeout_s > 0;
    char* places = area + 128;
    std::vector<double> read_us, segment_us;
    std::string why;
    bool reads_ok = true;
    for (uint64_t t = 0; t < 2 * (kWarmTrips + kTimedTrips); ++t) {
      const bool by_read = t % 2 == 0;
      char* place = places + t / 2 % kReadProbePlaces * kReadProbeBytes;
      if (rank == 0) {
        std::memset(buffer.data(), static_cast<int>(t & 0x7f), kReadProbeBytes);
        const Clock::time_point t0 = Clock::now();
        if (!by_read) std::memcpy(place, buffer.data(), kReadProbeBytes);
        flag(area, 0).store(t + 1, std::memory_order_release);
        wait_for(area, 1, t + 1, deadline, bounded, 1);
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (t >= 2 * kWarmTrips) (by_read ? read_us : segment_us).push_back(us);
      } else {
        wait_for(area, 0, t + 1, deadline, bounded, 0);
        if (by_read) {
          // A failed read still raises the flag: rank 0 must not wait forever.
          reads_ok = reads_ok && read_peer_memory(owner[0], buffer.data(), owner[1],
                                                  kReadProbeBytes, why) &&
                     buffer[kReadProbeBytes - 1] == static_cast<char>(t & 0x7f);
        } else {
          std::memcpy(buffer.data(), place, kReadProbeBytes);
        }
        flag(area, 1).store(t + 1, std::memory_order_release);
      }
    }
    if (rank == 0) {
      result[0] = median(read_us);
      result[1] = median(segment_us);
    } else {
      result[2] = reads_ok ? 1 : 0;
    }
  }
  // Rank 1's verdict on its reads reaches rank 0 before rank 0 tells all.
  double ok = result[2];
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_DOUBLE, MPI_MIN, node_comm),
            "MPI_Allreduce (peer-read probe)");
  check_mpi(MPI_Bcast(result, 2, MPI_DOUBLE, 0, node_comm), "MPI_Bcast (peer-read probe)");
  if (ok < 1) return std::nullopt;
  return ReadTimes{result[0], result[1]};
}

ReadVerdict agree_fast_reads(MPI_Comm node_comm, char* area, std::optional<bool> setting,
                             bool shared_cores, double timeout_s) {
  // What this process measured before, on any communicator of its node
  // (-1: nothing yet). Atomic: threads may create communicators at once.
  static std::atomic<int> measured{-1};
  const int known = setting ? static_cast<int>(*setting) : measured.load();
  // Every rank's answer (-1: none) as its maximum and minimum, in one call.
  int span[2] = {known, -known};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, span, 2, MPI_INT, MPI_MAX, node_comm),
            "MPI_Allreduce (TUTTI_READS)");
  const int hi = span[0], lo = -span[1];
  if (lo == hi && lo >= 0)
    return {lo == 1, setting ? "TUTTI_READS" : "measured earlier in this process"};
  if (shared_cores) return {true, "not measured: the ranks share cores"};
  if (!area) return {true, "not measured: the shared segment is too small for the probe"};
  const std::optional<ReadTimes> t = time_peer_reads(node_comm, area, timeout_s);
  if (!t) return {true, "not measured: a peer read failed"};
  measured.store(t->reads_faster() ? 1 : 0);
  return {t->reads_faster(), str("a 64 KiB block took ", t->read_us, " us by a peer read, ",
                                 t->segment_us, " us through the segment")};
}

}  // namespace tutti
