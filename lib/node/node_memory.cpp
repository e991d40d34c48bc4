#include "node/node_memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "transport/mpi_types.hpp"

namespace tutti {
namespace {

// Where the segment starts: a page boundary, so that every flag starts a
// cache line and every slot (a multiple of 64 bytes from the data start)
// does too, like the line-aligned buffers the shm algorithms copy to.
constexpr size_t kSegmentAlignment = 4096;

}  // namespace

size_t default_node_memory_bytes(int nranks) {
  constexpr size_t kSlot = 2u << 20, kCap = 256u << 20;
  return std::min(kCap, 2 * static_cast<size_t>(nranks) * kSlot);
}

namespace {

// Each process still takes a fault on its first write to every page of the
// segment, even one that another rank faulted in: the page must enter this
// process's page table. The slots move through the whole segment from call
// to call (SharedPort::take_slide), so without this the first few dozen
// calls of each size pay those faults. Adding zero is a write, so the page
// is mapped writable, and it keeps the bytes: a rank that has finished
// here may already be writing its slots (a locked add cannot lose its
// store).
void map_every_page(char* data, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t at = 0; at + sizeof(uint64_t) <= bytes; at += page)
    __atomic_fetch_add(reinterpret_cast<uint64_t*>(data + at), 0, __ATOMIC_RELAXED);
}

}  // namespace

std::unique_ptr<NodeMemory> NodeMemory::allocate(MPI_Comm comm, size_t data_bytes,
                                                 bool shared_cores) {
  int nranks = 1, rank = 0;
  check_mpi(MPI_Comm_size(comm, &nranks), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  if (data_bytes == 0 || nranks < 2) return nullptr;
  // The flag lines' layout must be the same on every rank.
  int any_shares = shared_cores ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &any_shares, 1, MPI_INT, MPI_MAX, comm),
            "MPI_Allreduce (shared segment layout)");
  const int groups = SharedSegment::signal_groups(nranks, any_shares != 0);
  // MPI need not return an aligned window (Open MPI's osc/sm returned one 8
  // bytes past a line), so ask for one alignment unit more and start the
  // segment at the first aligned address. Otherwise every copy between the
  // data area and a line-aligned user buffer is misaligned, which memcpy
  // handles badly on some CPUs (see host/copy.hpp).
  const size_t flags = SharedSegment::flag_bytes(nranks, groups);
  const size_t total = flags + data_bytes;
  const size_t allocated = total + kSegmentAlignment;
  // Rank 0 allocates the whole segment (one contiguous range with the same
  // offsets everywhere); the others map it.
  // The hint is only a hint (rank 0 allocates everything anyway): without an
  // info object the window is made all the same, so a failure here must not
  // keep this rank out of the collective call below.
  MPI_Info info = MPI_INFO_NULL;
  if (MPI_Info_create(&info) != MPI_SUCCESS) {
    info = MPI_INFO_NULL;
  } else if (MPI_Info_set(info, "alloc_shared_noncontig", "false") != MPI_SUCCESS) {
    MPI_Info_free(&info);
    info = MPI_INFO_NULL;
  }
  void* mine = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(rank == 0 ? allocated : 0), 1, info,
                                         comm, &mine, &win);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  // Every rank takes the segment or none does: a rank that went on alone
  // would wait in the barrier below for ranks that never come.
  int ok = rc == MPI_SUCCESS ? 1 : 0, all_ok = 0;
  check_mpi(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm),
            "MPI_Allreduce (do all ranks have the shared segment?)");
  if (!all_ok) {
    if (win != MPI_WIN_NULL)
      check_mpi(MPI_Win_free(&win), "MPI_Win_free (a shared segment some rank could not map)");
    return nullptr;  // no shared memory here: the shm algorithms refuse
  }
  MPI_Aint size = 0;
  int disp_unit = 1;
  void* window = nullptr;
  check_mpi(MPI_Win_shared_query(win, 0, &size, &disp_unit, &window), "MPI_Win_shared_query");
  const uintptr_t at = reinterpret_cast<uintptr_t>(window);
  void* base = reinterpret_cast<void*>((at + kSegmentAlignment - 1) & ~uintptr_t{kSegmentAlignment - 1});
  // Flags start at zero (rank 0 clears them before anyone can signal), and
  // every rank faults in a share of the data pages now rather than in the
  // first timed collective (fresh pages fault in at well under 1 GB/s).
  if (rank == 0) std::memset(base, 0, flags);
  char* data = static_cast<char*>(base) + flags;
  const size_t share = data_bytes / static_cast<size_t>(nranks);
  std::memset(data + share * static_cast<size_t>(rank), 0,
              rank == nranks - 1 ? data_bytes - share * static_cast<size_t>(rank) : share);
  check_mpi(MPI_Barrier(comm), "MPI_Barrier (shared segment)");
  map_every_page(data, data_bytes);
  return std::unique_ptr<NodeMemory>(new NodeMemory(win, base, total, nranks, groups, rank));
}

NodeMemory::NodeMemory(MPI_Win win, void* base, size_t bytes, int nranks, int groups, int rank)
    : win_(win), segment_(base, bytes, nranks, groups), port_(&segment_, rank) {}

NodeMemory::~NodeMemory() {
  if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
}

}  // namespace tutti
