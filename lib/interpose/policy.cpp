#include "interpose/policy.hpp"

#include <bit>
#include <cstdlib>

namespace tutti::interpose {

int trials_per_side() {
  static const int trials = [] {
    const char* v = std::getenv("TUTTI_MPI_TRIALS");
    return v && *v ? std::max(0, std::atoi(v)) : 4;
  }();
  return trials;
}

int Policy::slot_of(Coll coll, size_t bytes) {
  const int size_class = std::min(kClasses - 1, static_cast<int>(std::bit_width(bytes)));
  return static_cast<int>(coll) * kClasses + size_class;
}

Policy::Side Policy::decided(Coll coll, size_t bytes) const {
  const Class& c = classes_[slot_of(coll, bytes)];
  return c.winner == static_cast<int8_t>(Side::mpi) ? Side::mpi : Side::tutti;
}

// Calls 0 and 1 warm each side up (tutti builds its schedule, MPI picks its
// algorithm); then tutti and MPI alternate, `trials_per_side()` each.
Policy::Choice Policy::choose(Coll coll, size_t bytes) {
  if (coll == Coll::alltoallv || trials_per_side() == 0) return {};
  const int slot = slot_of(coll, bytes);
  Class& c = classes_[slot];
  if (c.winner >= 0) return {static_cast<Side>(c.winner), false, slot};
  const Side side = c.calls % 2 == 0 ? Side::tutti : Side::mpi;
  return {side, true, slot};
}

void Policy::record(const Choice& choice, double seconds, MPI_Comm comm) {
  Class& c = classes_[choice.slot];
  if (c.calls >= 2) c.seconds[static_cast<int>(choice.side)] += seconds;
  ++c.calls;
  if (c.calls < 2 + 2 * trials_per_side()) return;
  std::array<double, 2> slowest{};
  if (PMPI_Allreduce(c.seconds.data(), slowest.data(), 2, MPI_DOUBLE, MPI_MAX, comm) !=
      MPI_SUCCESS) {
    c.winner = static_cast<int8_t>(Side::tutti);  // the same failure on every rank
    return;
  }
  c.winner = static_cast<int8_t>(slowest[1] < slowest[0] ? Side::mpi : Side::tutti);
}

}  // namespace tutti::interpose
