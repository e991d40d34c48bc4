// A rank blocked in the MPI library must still do its part of tutti's
// non-blocking calls: rank 0 starts an MPI_Ibcast (tutti's) and then waits
// in MPI_Recv for rank 1, which first waits for that ibcast. A large bcast
// needs the root to go on writing after its first part, and tutti progresses
// only when called: the program, correct under MPI's progress rule, waited
// until TUTTI_TIMEOUT. Open MPI runs the callbacks registered with
// opal_progress_register in every wait of its own; libtutti-mpi registers
// one that calls tutti_progress while any of tutti's requests is
// outstanding. Other MPI libraries offer no such hook (nothing registered).
#pragma once

namespace tutti::interpose {

// Registers the callback, once (at the first communicator tutti serves).
void hook_progress();
// Unregisters it (MPI_Finalize, before tutti's communicators go).
void unhook_progress();

}  // namespace tutti::interpose
