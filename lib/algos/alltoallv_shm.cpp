// alltoallv "shm": single node; the exchange of algos/flag_exchange.hpp:
// blocks of up to 3 KiB ride in the segment's flag lines, larger ones are
// read in place by their receivers (cross-memory attach), or go as
// messages where ranks cannot read each other.
//   Steps:    copy the own block; the small blocks in the flag lines, as
//             many signals to one peer a round as its lines hold unread
//             (4); then the larger ones (their addresses in a flag round,
//             the reads, a flag round back to their owners).
//             A blocking call out of place whose blocks all go in the lines
//             runs directly (engine/direct_call.hpp): 0.52-0.64 of Open
//             MPI's time at 8-512 B on 2 ranks against 0.65-0.76 by the
//             engine (3 alternating jobs each, 2026-11-28).
//   Traffic:  a small block is copied into the lines and out of them; a
//             large one once (by messages: as alltoallv "pairwise").
//   Scratch:  0; in place the input's extent.
//   Rounds:   the most pieces of any of the rank's blocks / 4, then 2 flag
//             rounds. Cost: about a flag round per 4 pieces, then 2 flag
//             rounds + the larger of the bytes a rank reads and the bytes
//             read from it at copy speed (by messages: (P-1) alpha +
//             max(sent, received) beta).
//   Why:      alltoallv of 8-512 B on 2 ranks took 0.73-1.0 us by
//             messages against Open MPI's 0.52-0.62, in the flag lines
//             0.25-0.43 (2026-11-28): a message through UCX costs several
//             flag rounds. Read in place, 8-64 KiB per rank (4-32 KiB
//             blocks) on 2 ranks took 0.92-0.97 of Open MPI's time against
//             1.13-2.8 by messages; on 4 ranks 16-256 KiB 0.87-1.12
//             against 1.18-3.6; from 1 MiB both about level with Open MPI
//             (alternating jobs, 2026-11-28:
//             docs/perf/alltoallv-reads-2026-11-28.txt).
//   Refuses:  ranks on more than one node, no shared segment.
#include "algos/flag_exchange.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) { append_flag_exchange(b, alltoallv_exchange_layout(b)); }

bool run_direct(const DirectCall& c) {
  const CollArgs& a = c.args;
  const size_t es = a.elem_size();
  const char* in = static_cast<const char*>(c.input);
  char* out = static_cast<char*>(c.output);
  return run_flag_exchange_direct(
      c, [&](int q) { return a.send_counts[static_cast<size_t>(q)] * es; },
      [&](int q) { return a.recv_counts[static_cast<size_t>(q)] * es; },
      [&](int q) { return in + a.send_displs[static_cast<size_t>(q)] * es; },
      [&](int q) { return out + a.recv_displs[static_cast<size_t>(q)] * es; });
}

}  // namespace

extern const Algorithm kAlltoallvShm{
    "shm", Collective::Alltoallv,
    "single node: blocks up to 3 KiB ride in the flag lines, larger ones are read in place",
    refuse_flag_exchange, build, flag_exchange_direct_applies, run_direct};

}  // namespace tutti::algos
