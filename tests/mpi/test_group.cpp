// Grouped calls (tutti_group_start/end): every collective and point-to-point
// call grouped, blocking and not, several groups in flight, small
// allreduces fused, each result against the reference; misuse rejected
// with a clear error. Mismatched groups under TUTTI_CHECK: test_faults.cpp.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "mpi_harness.hpp"
#include "user_call.hpp"

namespace tutti::testing {
namespace {

// One call of a group: this rank's arguments and buffers, and the result
// the reference says it must leave.
struct GroupedCase {
  std::vector<CollArgs> per_rank;
  std::vector<AlltoallvLayout> layouts;
  std::unique_ptr<UserBuffers> bufs;
  Bytes want;
  bool nonblocking = false;
  tutti_request_t req = nullptr;
  CollArgs& mine() { return per_rank[static_cast<size_t>(world_rank())]; }
};

std::unique_ptr<GroupedCase> prepare(const CollArgs& args, uint64_t seed, bool nonblocking) {
  const int p = world_size(), me = world_rank();
  auto c = std::make_unique<GroupedCase>();
  c->nonblocking = nonblocking;
  c->per_rank.assign(static_cast<size_t>(p), args);
  if (args.coll == Collective::Alltoallv) {
    for (int q = 0; q < p; ++q)
      c->layouts.push_back(alltoallv_layout(q, p, args.count, seed, args.in_place));
    for (int q = 0; q < p; ++q) c->layouts[q].attach(c->per_rank[q]);
  }
  if (has_root(args.coll))
    for (int q = 0; q < p; ++q) c->per_rank[q].in_place = args.in_place && q == args.root;
  std::vector<Bytes> inputs;
  for (int q = 0; q < p; ++q) {
    const BufferShape shape = buffer_shape(c->per_rank[q], q, p);
    size_t bytes = args.coll == Collective::Bcast ? shape.output_bytes : shape.input_bytes;
    if (args.coll == Collective::Scatter && q != args.root) bytes = 0;
    inputs.push_back(make_input(c->per_rank[q], q, p, bytes, seed));
  }
  c->want = reference_outputs(c->per_rank, inputs)[me];
  c->bufs = std::make_unique<UserBuffers>(c->mine(), me, p);
  c->bufs->set_input(inputs[me]);
  return c;
}

// Issues the cases inside one group and ends it; "" or what failed.
std::string issue_group(std::vector<std::unique_ptr<GroupedCase>>& cases) {
  if (tutti_group_start() != TUTTI_SUCCESS) return str("tutti_group_start: ", tutti_last_error());
  for (auto& c : cases) {
    const int st = start_tutti(c->mine(), c->bufs->sendbuf(), c->bufs->recvbuf(), world(),
                               c->nonblocking ? &c->req : nullptr);
    if (st != TUTTI_SUCCESS) return str(describe(c->mine()), ": ", tutti_last_error());
  }
  if (tutti_group_end() != TUTTI_SUCCESS) return str("tutti_group_end: ", tutti_last_error());
  return "";
}

// Waits for the non-blocking cases and checks every result; "" or the
// first problem.
std::string finish_and_check(std::vector<std::unique_ptr<GroupedCase>>& cases) {
  std::string error;
  for (auto& c : cases) {
    if (c->nonblocking && tutti_wait(&c->req) != TUTTI_SUCCESS && error.empty())
      error = str(describe(c->mine()), ": tutti_wait: ", tutti_last_error());
    if (!error.empty() || !buffer_shape(c->mine(), world_rank(), world_size()).has_output)
      continue;
    std::string detail;
    if (first_difference(c->bufs->output(), c->want, c->mine().dtype, &detail) >= 0)
      error = str(describe(c->mine()), c->nonblocking ? " (non-blocking)" : "",
                  ": wrong result: ", detail);
  }
  return error;
}

tutti_comm_stats_t stats() {
  tutti_comm_stats_t s{};
  REQUIRE(tutti_comm_stats(world(), &s) == TUTTI_SUCCESS);
  return s;
}

constexpr size_t kFuseBytes = 256 * 1024;  // TUTTI_GROUP_FUSE_BYTES's default

}  // namespace

TEST_CASE("grouped allreduces, fused or not, equal the reference", "[group]") {
  const Datatype dtypes[] = {Datatype::Float32, Datatype::Int32, Datatype::Float64, Datatype::Int8,
                             Datatype::Bfloat16};
  const Op ops[] = {Op::Sum, Op::Max, Op::Min, Op::Avg};
  // Primes, one, and counts above the fusion limit for 4- and 8-byte types.
  const size_t counts[] = {1, 2, 7, 31, 97, 1031, 4099, 65537, 70001};
  std::mt19937 pick(1234);  // the same on every rank: every rank groups the same calls
  for (int round = 0; round < 6; ++round) {
    std::vector<std::unique_ptr<GroupedCase>> cases;
    std::map<std::pair<Datatype, Op>, int> fusable;
    const int n = 2 + round * 3;
    for (int i = 0; i < n; ++i) {
      CollArgs a{.coll = Collective::Allreduce};
      a.dtype = dtypes[pick() % std::size(dtypes)];
      a.op = ops[pick() % std::size(ops)];
      a.count = counts[pick() % std::size(counts)];
      a.in_place = pick() % 2 == 0;
      const bool nonblocking = round >= 3 && pick() % 2 == 0;
      if (a.count * datatype_size(a.dtype) <= kFuseBytes) ++fusable[{a.dtype, a.op}];
      cases.push_back(prepare(a, 100 + static_cast<uint64_t>(round * 50 + i), nonblocking));
    }
    int fused = 0, batches = 0;
    for (const auto& [key, k] : fusable)
      if (k >= 2) fused += k, ++batches;
    const tutti_comm_stats_t before = stats();
    std::string error = issue_group(cases);
    if (error.empty()) error = finish_and_check(cases);
    INFO("round " << round << " rank " << world_rank() << ": " << error);
    CHECK(all_ranks(error.empty()));
    const tutti_comm_stats_t after = stats();
    CHECK(after.grouped_calls - before.grouped_calls == static_cast<uint64_t>(n));
    CHECK(after.fused_calls - before.fused_calls == static_cast<uint64_t>(fused));
    // Each batch ran as one collective.
    CHECK(after.collectives - before.collectives == static_cast<uint64_t>(n - fused + batches));
  }
}

TEST_CASE("every collective in groups, blocking and not, two groups in flight", "[group]") {
  const int p = world_size();
  const Collective colls[] = {Collective::Allreduce, Collective::Reduce,    Collective::Bcast,
                              Collective::Allgather, Collective::ReduceScatter,
                              Collective::Gather,    Collective::Scatter,   Collective::Alltoall,
                              Collective::Alltoallv, Collective::Barrier};
  for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{1031}}) {
    std::vector<std::unique_ptr<GroupedCase>> first, second;
    uint64_t seed = 7 + count;
    for (Collective coll : colls) {
      for (int k = 0; k < 2; ++k) {
        CollArgs a{.coll = coll, .count = count, .dtype = Datatype::Int32, .op = Op::Sum};
        a.root = p - 1 - k % p;  // roots other than 0
        a.in_place = k == 1 && coll != Collective::Bcast && coll != Collective::Barrier;
        auto& group = k == 0 ? first : second;
        ++seed;
        group.push_back(prepare(a, seed, /*nonblocking=*/(seed % 2) == 0));
      }
    }
    // Both groups end before any of their requests is waited for.
    std::string error = issue_group(first);
    if (error.empty()) error = issue_group(second);
    if (error.empty()) error = finish_and_check(second);
    if (error.empty()) error = finish_and_check(first);
    INFO("count " << count << " rank " << world_rank() << ": " << error);
    CHECK(all_ranks(error.empty()));
  }
}

TEST_CASE("blocking sends and receives in a group do not wait for each other", "[group]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  // 1 MiB each way: without the group, every rank's blocking send would
  // wait for a receive its peer only posts after its own send.
  const size_t n = size_t{1} << 18;
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  std::vector<int32_t> out(n), in(n, -1), sum(3, 0), ones(3, 1);
  for (size_t i = 0; i < n; ++i) out[i] = me * 1000003 + static_cast<int32_t>(i);
  REQUIRE(tutti_group_start() == TUTTI_SUCCESS);
  REQUIRE(tutti_send(out.data(), n, TUTTI_INT32, right, 5, world()) == TUTTI_SUCCESS);
  REQUIRE(tutti_recv(in.data(), n, TUTTI_INT32, left, 5, world()) == TUTTI_SUCCESS);
  REQUIRE(tutti_allreduce(ones.data(), sum.data(), 3, TUTTI_INT32, TUTTI_SUM, world()) == TUTTI_SUCCESS);
  const int st = tutti_group_end();
  INFO(tutti_last_error());
  REQUIRE(st == TUTTI_SUCCESS);
  bool ok = sum == std::vector<int32_t>(3, p);
  for (size_t i = 0; i < n && ok; ++i) ok = in[i] == left * 1000003 + static_cast<int32_t>(i);
  CHECK(all_ranks(ok));
}

TEST_CASE("group misuse gets a clear error and leaves the communicator usable", "[group]") {
  const int p = world_size();
  SECTION("an end without a start") {
    CHECK(tutti_group_end() == TUTTI_ERR_INVALID_ARGUMENT);
    CHECK(std::string(tutti_last_error()).find("no group is open") != std::string::npos);
  }
  SECTION("waiting for a request before its group ended, also in a nested group") {
    int32_t v = 1, r = 0;
    tutti_request_t req = nullptr;
    REQUIRE(tutti_group_start() == TUTTI_SUCCESS);
    REQUIRE(tutti_group_start() == TUTTI_SUCCESS);
    REQUIRE(tutti_iallreduce(&v, &r, 1, TUTTI_INT32, TUTTI_SUM, world(), &req) == TUTTI_SUCCESS);
    REQUIRE(tutti_group_end() == TUTTI_SUCCESS);  // inner: nothing starts yet
    int done = 1;
    CHECK(tutti_test(&req, &done) == TUTTI_ERR_INVALID_ARGUMENT);
    CHECK(done == 0);
    CHECK(tutti_wait(&req) == TUTTI_ERR_INVALID_ARGUMENT);
    CHECK(std::string(tutti_last_error()).find("tutti_group_end first") != std::string::npos);
    REQUIRE(req != nullptr);
    REQUIRE(tutti_group_end() == TUTTI_SUCCESS);
    CHECK(tutti_wait(&req) == TUTTI_SUCCESS);
    CHECK(all_ranks(r == p));
  }
  SECTION("a bad call inside a group is refused at once; the rest of the group runs") {
    int32_t v = 2, r = 0;
    REQUIRE(tutti_group_start() == TUTTI_SUCCESS);
    CHECK(tutti_allreduce(&v, &r, 1, static_cast<tutti_datatype_t>(99), TUTTI_SUM, world()) ==
          TUTTI_ERR_INVALID_ARGUMENT);
    CHECK(tutti_bcast(&v, 1, TUTTI_INT32, p, world()) == TUTTI_ERR_INVALID_ARGUMENT);
    REQUIRE(tutti_allreduce(&v, &r, 1, TUTTI_INT32, TUTTI_SUM, world()) == TUTTI_SUCCESS);
    REQUIRE(tutti_group_end() == TUTTI_SUCCESS);
    CHECK(all_ranks(r == 2 * p));
  }
  SECTION("a communicator with grouped calls pending cannot be destroyed") {
    tutti_comm_t c = nullptr;
    REQUIRE(tutti_comm_create(MPI_COMM_WORLD, &c) == TUTTI_SUCCESS);
    int32_t v = 3, r = 0;
    REQUIRE(tutti_group_start() == TUTTI_SUCCESS);
    REQUIRE(tutti_allreduce(&v, &r, 1, TUTTI_INT32, TUTTI_SUM, c) == TUTTI_SUCCESS);
    CHECK(tutti_comm_destroy(c) == TUTTI_ERR_INVALID_ARGUMENT);
    REQUIRE(tutti_group_end() == TUTTI_SUCCESS);
    CHECK(all_ranks(r == 3 * p));
    CHECK(tutti_comm_destroy(c) == TUTTI_SUCCESS);
  }
}

}  // namespace tutti::testing
