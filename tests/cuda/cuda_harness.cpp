#include "cuda_harness.hpp"

#include <mpi.h>

#include <vector>

#include "base/status.hpp"
#include "reference.hpp"
#include "user_call.hpp"

namespace tutti::testing {
namespace {
tutti_comm_t g_world = nullptr;
}

void set_world(tutti_comm_t comm) { g_world = comm; }
tutti_comm_t world() { return g_world; }

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

bool all_ranks(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

std::string agree(const std::string& local) {
  const int rank = world_rank();
  int first = local.empty() ? world_size() : rank, lowest = 0;
  MPI_Allreduce(&first, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (lowest == world_size()) return "";
  int len = static_cast<int>(local.size());
  MPI_Bcast(&len, 1, MPI_INT, lowest, MPI_COMM_WORLD);
  std::string message = local;
  message.resize(static_cast<size_t>(len));
  MPI_Bcast(message.data(), len, MPI_CHAR, lowest, MPI_COMM_WORLD);
  return message;
}

std::string check_on_device(CollArgs args, uint64_t seed, Placement where, bool nonblocking) {
  const int p = world_size(), me = world_rank();
  std::vector<CollArgs> per_rank(static_cast<size_t>(p), args);
  std::vector<AlltoallvLayout> layouts;
  if (args.coll == Collective::Alltoallv) {
    for (int q = 0; q < p; ++q)
      layouts.push_back(alltoallv_layout(q, p, args.count, seed, args.in_place));
    for (int q = 0; q < p; ++q) layouts[q].attach(per_rank[q]);
  }
  if (has_root(args.coll))
    for (int q = 0; q < p; ++q) per_rank[q].in_place = args.in_place && q == args.root;
  const CollArgs& a = per_rank[me];
  std::vector<Bytes> inputs;
  for (int q = 0; q < p; ++q) {
    const BufferShape shape = buffer_shape(per_rank[q], q, p);
    size_t bytes = a.coll == Collective::Bcast ? shape.output_bytes : shape.input_bytes;
    if (a.coll == Collective::Scatter && q != a.root) bytes = 0;
    inputs.push_back(make_input(per_rank[q], q, p, bytes, seed));
  }
  const Bytes want = reference_outputs(per_rank, inputs)[me];

  std::string error;
  try {
    UserBuffers host(a, me, p);
    host.set_input(inputs[me]);
    DeviceBuffers dev(host, where.offset, where.device_send, where.device_recv);
    dev.upload();
    const int st = call_tutti(a, dev.sendbuf(), dev.recvbuf(), world(), nonblocking);
    dev.download();
    if (st != TUTTI_SUCCESS) {
      error = str("rank ", me, ": ", tutti_strerror(st), ": ", tutti_last_error());
    } else if (buffer_shape(a, me, p).has_output) {
      std::string detail;
      if (first_difference(host.output(), want, a.dtype, &detail) >= 0)
        error = str("rank ", me, ": wrong result: ", detail);
    }
  } catch (const std::exception& e) {
    error = str("rank ", me, ": ", e.what());
  }
  const std::string agreed = agree(error);
  if (agreed.empty()) return "";
  return str(describe(a), " algorithm=", tutti_comm_last_algorithm(world()), " nranks=", p,
             " send=", where.device_send ? "device" : "host",
             " recv=", where.device_recv ? "device" : "host", " offset=", where.offset,
             nonblocking ? " nonblocking" : "", ": ", agreed);
}

}  // namespace tutti::testing
