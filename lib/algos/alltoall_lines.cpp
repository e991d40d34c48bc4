// alltoall "lines": single node; the exchange of algos/flag_exchange.hpp
// (alltoallv "shm"'s) on equal blocks: blocks of up to 1.5 KiB ride in the
// segment's flag lines, blocks up to 128 KiB through slots (4 KiB on 2
// ranks whose reads are fast), larger ones are read in place by their
// receivers (cross-memory attach), or go as messages where ranks cannot
// read each other.
//   Steps:    copy the own block; every block of m bytes in ceil(m / 384)
//             signals to its peer in one round; or, staged, copied into
//             a slot, a flag round, copied out; or, larger, its address
//             in a flag round, the reads, a flag round back to the owners.
//             A blocking call out of place without large blocks runs
//             directly (engine/direct_call.hpp).
//   Traffic:  a block in the lines or a slot is copied in and out; a
//             larger one once; no messages.
//   Scratch:  0; in place P m. Shared (staged): 2 x P x P slots.
//   Rounds:   1 flag round (larger blocks: 2).
//   Why:      "shm" stages every block through a slot and then signals:
//             a flag round plus two copies through lines of their own. In
//             the lines the data rides with its signal: 8-512 B per rank
//             on 2 ranks took 0.62-0.86 of Open MPI's time against shm's
//             0.90-1.40 (alternating jobs, 2026-11-28:
//             docs/perf/alltoall-lines-2026-11-28.txt); from 1 KiB shm is
//             level or ahead, and the rules keep it there.
//   Refuses:  ranks on more than one node, no shared segment.
#include "algos/flag_exchange.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) { append_flag_exchange(b, alltoall_exchange_layout(b), false); }

bool run_direct(const DirectCall& c) {
  const size_t m = c.args.count * c.args.elem_size();
  const char* in = static_cast<const char*>(c.input);
  char* out = static_cast<char*>(c.output);
  const auto block = [m](int) { return m; };
  return run_flag_exchange_direct(
      c, block, block, [&](int q) { return in + static_cast<size_t>(q) * m; },
      [&](int q) { return out + static_cast<size_t>(q) * m; });
}

}  // namespace

extern const Algorithm kAlltoallLines{
    "lines", Collective::Alltoall,
    "single node: small blocks in the flag lines, mid-size ones in slots, larger ones read in place",
    refuse_flag_exchange, build, flag_exchange_direct_applies, run_direct};

}  // namespace tutti::algos
