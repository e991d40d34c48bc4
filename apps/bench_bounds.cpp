#include "bench_bounds.hpp"

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "cli.hpp"
#include "transport/mpi_types.hpp"

namespace tutti::apps {
namespace {

constexpr size_t kLine = 64;
// Spins before yielding while waiting for the other rank's line: enough
// for any round trip between running cores, short enough that two ranks
// sharing a core (oversubscribed jobs) still take turns.
constexpr int kSpinsBeforeYield = 20000;

std::atomic_ref<unsigned long> line(volatile unsigned long* lines, int index) {
  return std::atomic_ref<unsigned long>(
      *const_cast<unsigned long*>(lines + index * (kLine / sizeof(unsigned long))));
}

// The lines hold counters that only grow; the other rank's may already have
// moved past `value` (in an exchange it can be one trip ahead).
void wait_at_least(volatile unsigned long* lines, int index, unsigned long value) {
  for (int spins = 0; line(lines, index).load(std::memory_order_acquire) < value;)
    if (++spins > kSpinsBeforeYield) sched_yield();
}

// The window: three lines (two flags, whatever alignment MPI gave), then
// per rank its exchange places, then rank 0's area for peer copies.
constexpr size_t kPlacesPerRank = HardwareBounds::kExchangePlaces * HardwareBounds::kMaxExchangeBytes;
constexpr size_t kWindowBytes =
    3 * kLine + 2 * kPlacesPerRank + HardwareBounds::kMaxPeerCopyBytes;

}  // namespace

HardwareBounds::HardwareBounds(MPI_Comm world) : world_(world) {
  int rank = 0;
  MPI_Comm_rank(world_, &rank);
  MPI_Comm first_two = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(world_, rank < 2 ? 0 : MPI_UNDEFINED, rank, &first_two),
            "MPI_Comm_split (bounds)");
  if (first_two == MPI_COMM_NULL) return;
  // Ranks 0 and 1 share a node if splitting them by node leaves them together.
  check_mpi(MPI_Comm_split_type(first_two, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &pair_),
            "MPI_Comm_split_type (bounds)");
  check_mpi(MPI_Comm_free(&first_two), "MPI_Comm_free (bounds)");
  int size = 0;
  MPI_Comm_size(pair_, &size);
  int together = size == 2, both = 0;
  // Both ranks must agree, or one would wait on a window the other lacks.
  check_mpi(MPI_Allreduce(&together, &both, 1, MPI_INT, MPI_MIN, pair_), "MPI_Allreduce (bounds)");
  if (!both) {
    check_mpi(MPI_Comm_free(&pair_), "MPI_Comm_free (bounds)");
    pair_ = MPI_COMM_NULL;
    return;
  }
  int pair_rank = 0;
  MPI_Comm_rank(pair_, &pair_rank);
  void* mine = nullptr;
  const MPI_Aint bytes = pair_rank == 0 ? static_cast<MPI_Aint>(kWindowBytes) : 0;
  check_mpi(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, pair_, &mine, &window_),
            "MPI_Win_allocate_shared (bounds)");
  MPI_Aint got = 0;
  int unit = 1;
  void* base = nullptr;
  check_mpi(MPI_Win_shared_query(window_, 0, &got, &unit, &base), "MPI_Win_shared_query (bounds)");
  // Two lines of their own, whatever alignment MPI gave the window.
  const uintptr_t at = (reinterpret_cast<uintptr_t>(base) + kLine - 1) & ~uintptr_t{kLine - 1};
  lines_ = reinterpret_cast<volatile unsigned long*>(at);
  exchange_areas_ = reinterpret_cast<char*>(at + 2 * kLine);
  if (pair_rank == 0) {
    line(lines_, 0).store(0);
    line(lines_, 1).store(0);
  }
  // Touch this rank's areas and private buffers now, so that no page
  // fault is timed.
  std::memset(exchange_areas_ + pair_rank * kPlacesPerRank, 0, kPlacesPerRank);
  peer_area_ = exchange_areas_ + 2 * kPlacesPerRank;
  if (pair_rank == 0) std::memset(peer_area_, 0, kMaxPeerCopyBytes);
  exchange_private_.assign(2 * kMaxExchangeBytes, 1);
  check_mpi(MPI_Barrier(pair_), "MPI_Barrier (bounds)");
}

HardwareBounds::~HardwareBounds() {
  if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
  if (pair_ != MPI_COMM_NULL) MPI_Comm_free(&pair_);
}

std::optional<double> HardwareBounds::round_trip_us(int trips) {
  int rank = 0;
  MPI_Comm_rank(world_, &rank);
  double result = -1;
  if (pair_ != MPI_COMM_NULL) {
    check_mpi(MPI_Barrier(pair_), "MPI_Barrier (bounds)");
    // Counters continue across calls, so the lines never need resetting.
    unsigned long next = line(lines_, rank).load(std::memory_order_relaxed);
    std::vector<double> us;
    for (int i = 0; i < trips; ++i) {
      ++next;
      if (rank == 0) {
        const double t0 = MPI_Wtime();
        line(lines_, 0).store(next, std::memory_order_release);
        wait_at_least(lines_, 1, next);
        us.push_back((MPI_Wtime() - t0) * 1e6);
      } else {
        wait_at_least(lines_, 0, next);
        line(lines_, 1).store(next, std::memory_order_release);
      }
    }
    if (rank == 0) result = median(us);
  }
  check_mpi(MPI_Bcast(&result, 1, MPI_DOUBLE, 0, world_), "MPI_Bcast (bounds)");
  if (result < 0) return std::nullopt;
  return result;
}

std::optional<double> HardwareBounds::exchange_us(size_t bytes, int trips) {
  int rank = 0;
  MPI_Comm_rank(world_, &rank);
  double result = -1;
  if (pair_ != MPI_COMM_NULL && bytes > 0 && bytes <= kMaxExchangeBytes) {
    check_mpi(MPI_Barrier(pair_), "MPI_Barrier (bounds)");
    const int peer = 1 - rank;
    char* source = exchange_private_.data();
    char* destination = source + kMaxExchangeBytes;
    auto area = [this](int owner, unsigned long trip) {
      return exchange_areas_ + static_cast<size_t>(owner) * kPlacesPerRank +
             trip % kExchangePlaces * kMaxExchangeBytes;
    };
    // The flag lines are the round trip's: both counters are equal between
    // calls. A rank rewrites a place only after seeing the flag the peer
    // raised after reading it (the peer is at most one trip ahead or behind).
    unsigned long next = line(lines_, rank).load(std::memory_order_relaxed);
    std::vector<double> us;
    for (int i = 0; i < trips; ++i) {
      ++next;
      const double t0 = MPI_Wtime();
      std::memcpy(area(rank, next), source, bytes);
      line(lines_, rank).store(next, std::memory_order_release);
      wait_at_least(lines_, peer, next);
      std::memcpy(destination, area(peer, next), bytes);
      us.push_back((MPI_Wtime() - t0) * 1e6);
    }
    // Keep the copies from being optimised away.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    check_mpi(MPI_Barrier(pair_), "MPI_Barrier (bounds)");
    if (rank == 0) result = median(us);
  }
  check_mpi(MPI_Bcast(&result, 1, MPI_DOUBLE, 0, world_), "MPI_Bcast (bounds)");
  if (result < 0) return std::nullopt;
  return result;
}

std::optional<HardwareBounds::PeerCopy> HardwareBounds::peer_copy_us(size_t bytes, int trips) {
  int rank = 0;
  MPI_Comm_rank(world_, &rank);
  double result[2] = {-1, -1};
  if (pair_ != MPI_COMM_NULL && bytes > 0 && bytes <= kMaxPeerCopyBytes) {
    check_mpi(MPI_Barrier(pair_), "MPI_Barrier (bounds)");
    // Touched: no page fault timed. Rank 0 copies its source in, as a
    // rank fills its slot from a caller's buffer.
    std::vector<char> own(bytes, 1);
    // Rank 0 copies the area in, timed (its lines taken back from rank 1's
    // core, which read them last), and raises its flag; rank 1 copies the
    // area out, timed (the lines modified in rank 0's core), and raises
    // its flag, after which rank 0 writes again. The counters continue
    // from the other measurements, where both are equal between calls.
    unsigned long next = line(lines_, rank).load(std::memory_order_relaxed);
    std::vector<double> us;
    for (int i = 0; i < trips; ++i) {
      ++next;
      if (rank == 0) {
        own[next % bytes] = static_cast<char>(next);  // not the same bytes every time
        const double t0 = MPI_Wtime();
        std::memcpy(peer_area_, own.data(), bytes);
        us.push_back((MPI_Wtime() - t0) * 1e6);
        line(lines_, 0).store(next, std::memory_order_release);
        wait_at_least(lines_, 1, next);
      } else {
        wait_at_least(lines_, 0, next);
        const double t0 = MPI_Wtime();
        std::memcpy(own.data(), peer_area_, bytes);
        us.push_back((MPI_Wtime() - t0) * 1e6);
        line(lines_, 1).store(next, std::memory_order_release);
      }
    }
    std::atomic_signal_fence(std::memory_order_seq_cst);
    result[rank] = median(us);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, result, 2, MPI_DOUBLE, MPI_MAX, pair_),
              "MPI_Allreduce (bounds)");
  }
  check_mpi(MPI_Bcast(result, 2, MPI_DOUBLE, 0, world_), "MPI_Bcast (bounds)");
  if (result[0] < 0 || result[1] < 0) return std::nullopt;
  return PeerCopy{result[1], result[0]};
}

void HardwareBounds::prepare_copy(size_t bytes) {
  copy_bytes_ = bytes;
  const size_t span = (bytes + kLine - 1) / kLine * kLine;
  if (storage_.size() < 2 * span + kLine) {
    storage_.assign(2 * span + kLine, 1);  // assign touches every page
    const uintptr_t at = (reinterpret_cast<uintptr_t>(storage_.data()) + kLine - 1) & ~uintptr_t{kLine - 1};
    from_ = reinterpret_cast<char*>(at);
    to_ = from_ + span;
  }
}

double HardwareBounds::timed_copy() {
  check_mpi(MPI_Barrier(world_), "MPI_Barrier (bounds)");
  const double t0 = MPI_Wtime();
  // Both buffers start a cache line, where memcpy is at its fastest: the
  // bound is the best case.
  std::memcpy(to_, from_, copy_bytes_);
  const double seconds = MPI_Wtime() - t0;
  // Keep the copy from being optimised away or reordered past the clock.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return seconds;
}

}  // namespace tutti::apps
