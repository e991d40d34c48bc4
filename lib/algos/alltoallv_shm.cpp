// alltoallv "shm": single node; the exchange of algos/flag_exchange.hpp:
// blocks of up to 1.5 KiB ride in the segment's flag lines, blocks up to
// 128 KiB go through a slot of the segment (4 KiB on 2 ranks whose peer
// reads are fast), larger ones are read in place by their receivers
// (cross-memory attach), or go as messages where ranks cannot read each
// other; on 2 ranks blocks from 512 KiB go through the slots in 1 MiB chunks.
//   Steps:    copy the own block; copy the mid-size blocks into the slots;
//             a flag round to every peer that carries the small blocks
//             (an empty signal where a pair has none); copy the mid-size
//             blocks out of the peers' slots; then the larger ones (their
//             addresses in a flag round, the reads, a flag round back to
//             their owners). Without slots (a small segment) blocks of up
//             to 3 KiB take as many line rounds as they need.
//             A blocking call out of place without large blocks runs
//             directly (engine/direct_call.hpp): 0.52-0.64 of Open MPI's
//             time at 8-512 B on 2 ranks against 0.65-0.76 by the engine
//             (3 alternating jobs each, 2026-11-28).
//   Traffic:  a small or mid-size block (or a chunked one) is copied in
//             and out; a large one once (by messages: as alltoallv
//             "pairwise").
//   Scratch:  0; in place the input's extent. Shared: 2 x P x P slots.
//   Rounds:   1 flag round, then on 2 ranks 1 per 1 MiB chunk, then 2 for
//             the large blocks. Cost (without chunks): a flag
//             round + 2 copies of the largest staged volume, then 2 flag
//             rounds + the larger of the bytes a rank reads and the bytes
//             read from it at copy speed (by messages: (P-1) alpha +
//             max(sent, received) beta).
//   Why:      alltoallv of 8-512 B on 2 ranks took 0.73-1.0 us by
//             messages against Open MPI's 0.52-0.62, in the flag lines
//             0.25-0.43 (2026-11-28): a message through UCX costs several
//             flag rounds. Mid-size blocks read in place (a system call of
//             several microseconds each) took 1.06-1.22 of Open MPI's time
//             at 8-128 KiB per rank on 2 ranks and 1.04-1.23 at 16-128 KiB
//             on 4 (far-apart cores, reads slow); through the slots
//             0.22-0.68 and 0.36-0.65, and blocks of 1.5-3 KiB staged
//             instead of in two rounds of lines 0.83-0.87 against 1.03-1.12
//             (2 ranks, 4 KiB per rank) and 0.86 against 1.21-1.75 (4
//             ranks, 8 KiB): docs/perf/alltoallv-slots-2026-11-29.txt.
//             From 256 KiB blocks reads are level with Open MPI (2 ranks
//             512 KiB per rank 1.05-1.12, 4 ranks 1 MiB 0.89-1.06); 2
//             ranks' blocks from 512 KiB in 1 MiB chunks through the
//             slots 0.64-0.93 (flag_exchange.hpp: kChunkedBlockFrom).
//   Refuses:  ranks on more than one node, no shared segment.
#include "algos/flag_exchange.hpp"

namespace tutti::algos {
namespace {

void build(ScheduleBuilder& b) { append_flag_exchange(b, alltoallv_exchange_layout(b), true); }

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
    "single node: small blocks in the flag lines, mid-size ones in slots, larger ones read in place",
    refuse_flag_exchange, build, flag_exchange_direct_applies, run_direct};

}  // namespace tutti::algos
