// Calls that tutti itself makes to MPI must reach the MPI library, not these
// wrappers: libtutti calls MPI_Allgather, MPI_Test, MPI_Iallreduce (its "mpi"
// algorithm) ... and with this library preloaded those names resolve here.
// A wrapper that finds the calling thread inside tutti goes straight to PMPI.
#pragma once

namespace tutti::interpose {

inline thread_local int tutti_depth = 0;

inline bool inside_tutti() { return tutti_depth > 0; }

// Held while a wrapper runs tutti code on this thread.
class InsideTutti {
 public:
  InsideTutti() { ++tutti_depth; }
  ~InsideTutti() { --tutti_depth; }
  InsideTutti(const InsideTutti&) = delete;
  InsideTutti& operator=(const InsideTutti&) = delete;
};

}  // namespace tutti::interpose
