// Which moves a mid-size block faster between two ranks of this node: a
// peer read in place (cross-memory attach: one copy, made by the reader in
// a system call) or the shared segment (the owner copies the block in, the
// reader copies it out)? The answer depends on the machine, not on the
// message: on one of this project's test VMs a 64 KiB bcast by reading took
// 4.6 us and through the segment 11.8 (slow cross-core writes); on another
// 8.0 and 3.9 (slow system calls; docs/perf/read-probe-2026-11-28.txt).
// Tuning rules with reads=fast or reads=slow (tuning/table.hpp) follow the
// answer, measured once per process when a communicator is created.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <string>

namespace tutti {

struct ReadTimes {
  double read_us = 0;     // median trip by a peer read
  double segment_us = 0;  // median trip through the segment
  bool reads_faster() const { return read_us < segment_us; }
};

// The block each trip moves, and the segment bytes the probe writes (its
// two flag lines and kReadProbePlaces places for the block, taken in turn
// as the segment's slots move from call to call).
inline constexpr size_t kReadProbeBytes = 64 * 1024;
inline constexpr size_t kReadProbePlaces = 4;
inline constexpr size_t kReadProbeAreaBytes = 128 + kReadProbePlaces * kReadProbeBytes;

// Collective over `node_comm` (at least 2 ranks, all allowed to read each
// other's memory: probe_peer_reads). Ranks 0 and 1 time trips of
// kReadProbeBytes from 0 to 1 both ways, alternating; the others wait.
// `area`: kReadProbeAreaBytes of the node's shared segment, the same
// memory on every rank and not in use. Every rank gets rank 0's medians;
// nullopt on every rank where a read failed. A wait longer than
// `timeout_s` (> 0) throws Error(TUTTI_ERR_TIMEOUT); MPI failures throw.
std::optional<ReadTimes> time_peer_reads(MPI_Comm node_comm, char* area, double timeout_s);

struct ReadVerdict {
  bool fast = true;  // true where nothing could be measured: the rules as before the probe
  std::string why;   // for the debug log: the times, the setting, or why none
};

// Collective over `node_comm` (as time_peer_reads): whether peer reads are
// the faster way on this node. `setting` is TUTTI_READS on this rank
// (nullopt: auto). Where every rank knows the answer (its setting, or a
// probe earlier in this process: the machine does not change) and all
// agree, that is it, at the cost of one MPI_Allreduce; otherwise the ranks
// time it (time_peer_reads, about 0.5 ms). No measurement, and fast,
// where `area` is null, where a read fails, and where `shared_cores` (the
// same on every rank): ranks that take turns on a core would time the
// scheduler.
ReadVerdict agree_fast_reads(MPI_Comm node_comm, char* area, std::optional<bool> setting,
                             bool shared_cores, double timeout_s);

}  // namespace tutti
