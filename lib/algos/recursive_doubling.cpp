#include "algos/recursive_doubling.hpp"

#include "algos/patterns.hpp"
#include "algos/recursive_halving.hpp"
#include "algos/ring.hpp"

namespace tutti::algos {

void append_recursive_doubling_inplace(ScheduleBuilder& b, BufRef data, size_t bytes) {
  if (b.nranks() == 1 || bytes == 0) return;
  const size_t chunk = chunk_bytes_of(b);
  const PowerOfTwoFold fold{b.rank(), b.nranks()};
  // A received vector lands here; a round never writes what it sends.
  const BufRef landing = fold.folded() ? data : b.scratch(bytes);
  append_fold_in(b, fold, data, data, landing, bytes);
  if (fold.folded()) {
    b.recv(fold.fold_partner(), data, bytes, chunk);
    b.end_round();
    return;
  }
  const int nr = fold.new_rank();
  for (int mask = 1; mask < fold.pof2(); mask <<= 1) {
    const int peer = fold.real_rank(nr ^ mask);
    b.send(peer, data, bytes, chunk);
    b.recv(peer, landing, bytes, chunk);
    b.end_round();
    if (nr & mask)
      b.reduce(data, landing, data, bytes);  // the peer's is the lower half
    else
      b.reduce(data, data, landing, bytes);
  }
  if (fold.fold_partner() >= 0) b.send(fold.fold_partner(), data, bytes, chunk);
  b.end_round();
}

}  // namespace tutti::algos
