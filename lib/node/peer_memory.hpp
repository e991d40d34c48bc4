// Single-copy transfers inside a node: a rank reads another rank's buffer
// in place with cross-memory attach (Linux process_vm_readv), the way Open
// MPI's and UCX's "cma" transports move large messages. Through the shared
// segment a transfer costs two copies (the owner's copy in, the reader's
// copy out); a peer read costs one, made by the reader alone.
//
// The algorithms that use it (lib/algos/*_cma.cpp) learn the addresses of a
// call's buffers through the segment's flag lines (ScheduleBuilder::
// publish_buffers) and end with a signal from every reader to the owner, so
// no buffer is read after its call returned.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tutti {

// What a rank publishes about one call: its process and buffers.
struct PeerAddresses {
  uint64_t pid = 0;
  uint64_t input = 0, output = 0, scratch = 0;
};
static_assert(sizeof(PeerAddresses) == 32);

// Copies `bytes` at address `src` of process `pid` to `dst`. A read of this
// process's own memory (the in-process simulator) is a memcpy. Returns
// false and says why on failure (the peer is gone, the range is unmapped).
bool read_peer_memory(uint64_t pid, void* dst, uint64_t src, size_t bytes, std::string& why);

// Collective over `node_comm`, whose ranks share one node: whether every
// rank can read every other's memory (the kernel allows cross-memory attach
// between them: same user and ptrace scope, or CAP_SYS_PTRACE; not
// forbidden by a seccomp profile; all in one pid namespace). Each rank
// reads a value from every other; the ranks agree on the answer. `wanted` false (TUTTI_CMA=0) on any
// rank makes it false everywhere. Throws Error on MPI failures.
bool probe_peer_reads(MPI_Comm node_comm, bool wanted);

}  // namespace tutti
