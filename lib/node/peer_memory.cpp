#include "node/peer_memory.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/status.hpp"
#include "transport/mpi_types.hpp"

namespace tutti {

bool read_peer_memory(uint64_t pid, void* dst, uint64_t src, size_t bytes, std::string& why) {
  if (bytes == 0) return true;
  if (pid == static_cast<uint64_t>(getpid())) {
    std::memcpy(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(src)), bytes);
    return true;
  }
  size_t done = 0;
  while (done < bytes) {
    // The kernel may copy less than asked (a large range is done in parts);
    // go on from where it stopped.
    iovec local{static_cast<char*>(dst) + done, bytes - done};
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(src + done)), bytes - done};
    const ssize_t n = process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = str("reading ", bytes, " bytes of process ", pid, " (cross-memory attach) failed: ",
                n < 0 ? std::strerror(errno) : "no progress");
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

bool probe_peer_reads(MPI_Comm node_comm, bool wanted) {
  int nranks = 1, rank = 0;
  check_mpi(MPI_Comm_size(node_comm, &nranks), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(node_comm, &rank), "MPI_Comm_rank");
  // A value each rank can predict for its neighbour: its pid, scrambled.
  constexpr uint64_t kMark = 0x74757474692d636dull;
  const uint64_t pid = static_cast<uint64_t>(getpid());
  const uint64_t token = pid ^ kMark;
  const uint64_t mine[2] = {pid, reinterpret_cast<uintptr_t>(&token)};
  std::vector<uint64_t> all(2 * static_cast<size_t>(nranks));
  check_mpi(MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, node_comm),
            "MPI_Allgather (cross-memory attach probe)");
  // Every pair, not only neighbours: ranks in different pid namespaces (a
  // container per rank) see each other's pids as other processes' or none,
  // and a read there must fail the probe, not later return wrong data.
  int ok = wanted ? 1 : 0;
  for (int q = 0; ok && q < nranks; ++q) {
    if (q == rank) continue;
    const size_t at = 2 * static_cast<size_t>(q);
    uint64_t seen = 0;
    std::string why;
    ok = read_peer_memory(all[at], &seen, all[at + 1], sizeof seen, why) && seen == (all[at] ^ kMark);
  }
  // Nobody may leave (and let `token` go) before every peer has read it.
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, node_comm),
            "MPI_Allreduce (cross-memory attach probe)");
  return ok == 1;
}

}  // namespace tutti
