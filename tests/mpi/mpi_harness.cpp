#include "mpi_harness.hpp"

#include <cstring>

#include "base/status.hpp"
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

int ranks_on_this_node() {
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
      MPI_SUCCESS)
    return 0;
  int ranks = 0;
  MPI_Comm_size(node, &ranks);
  MPI_Comm_free(&node);
  return ranks;
}

bool all_ranks(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

int call_collective(const CollArgs& a, const void* s, void* r, bool nb) {
  return call_tutti(a, s, r, world(), nb);
}

namespace {

// The same message on every rank: the lowest failing rank's.
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

}  // namespace

std::string check_collective(CollArgs args, uint64_t seed, bool nonblocking) {
  const int p = world_size(), me = world_rank();
  const bool rooted = has_root(args.coll);
  std::vector<CollArgs> per_rank(static_cast<size_t>(p), args);
  std::vector<AlltoallvLayout> layouts;
  if (args.coll == Collective::Alltoallv) {
    for (int q = 0; q < p; ++q) layouts.push_back(alltoallv_layout(q, p, args.count, seed, args.in_place));
    for (int q = 0; q < p; ++q) layouts[q].attach(per_rank[q]);
  }
  if (rooted)
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
  UserBuffers bufs(a, me, p);
  const Bytes& mine = inputs[me];
  bufs.set_input(mine);

  std::string error;
  const int st = call_collective(a, bufs.sendbuf(), bufs.recvbuf(), nonblocking);
  if (st != TUTTI_SUCCESS) {
    error = str("rank ", me, ": ", tutti_strerror(st), ": ", tutti_last_error());
  } else if (buffer_shape(a, me, p).has_output) {
    const Bytes got = bufs.output();
    const Bytes& expected = want;
    std::string detail;
    if (first_difference(got, expected, a.dtype, &detail) >= 0)
      error = str("rank ", me, ": wrong result: ", detail);
  }
  const std::string agreed = agree(error);
  if (agreed.empty()) return "";
  return str(describe(a), " algorithm=", tutti_comm_last_algorithm(world()), " nranks=", p,
             nonblocking ? " nonblocking" : "", ": ", agreed);
}

}  // namespace tutti::testing
