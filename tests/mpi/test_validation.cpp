// Argument validation of every public function: each invalid argument gives
// TUTTI_ERR_INVALID_ARGUMENT (or UNSUPPORTED) with a message that names it,
// on the calling rank only, and never a crash, a hang or a wrong answer.
// Every check here runs before any communication, so ranks may take
// different paths through it.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "mpi_harness.hpp"
#include "tutti_config.h"

namespace tutti::testing {
namespace {

void expect_error(int status, int want, const char* needle) {
  CHECK(status == want);
  const std::string message = tutti_last_error();
  INFO("message: " << message);
  CHECK(message.find(needle) != std::string::npos);
}

void expect_invalid(int status, const char* needle) {
  expect_error(status, TUTTI_ERR_INVALID_ARGUMENT, needle);
}

}  // namespace

TEST_CASE("rooted and block collectives name each invalid argument", "[api][validation]") {
  const int p = world_size(), me = world_rank();
  const size_t n = 8;
  std::vector<float> block(n, 1.0f), all(n * static_cast<size_t>(p), 1.0f);
  float* a = all.data();
  const tutti_datatype_t f32 = TUTTI_FLOAT32;

  expect_invalid(tutti_reduce_scatter(nullptr, block.data(), n, f32, TUTTI_SUM, world()), "sendbuf");
  expect_invalid(tutti_reduce_scatter(a, nullptr, n, f32, TUTTI_SUM, world()), "recvbuf");
  expect_invalid(tutti_reduce_scatter(a, a, n, f32, TUTTI_SUM, world()), "overlap");
  expect_invalid(tutti_reduce_scatter(a, block.data(), n, f32, static_cast<tutti_op_t>(7), world()), "op=7");
  expect_invalid(tutti_allgather(block.data(), nullptr, n, f32, world()), "recvbuf");
  expect_invalid(tutti_allgather(nullptr, a, n, f32, world()), "sendbuf");
  expect_invalid(tutti_allgather(a, a, n, f32, world()), "overlap");
  expect_invalid(tutti_allgather(block.data(), a, n, static_cast<tutti_datatype_t>(-2), world()), "dt=-2");
  expect_invalid(tutti_alltoall(nullptr, a, n, f32, world()), "sendbuf");
  expect_invalid(tutti_alltoall(a, a + 1, n, f32, world()), "overlap");
  expect_invalid(tutti_alltoall(a, a, static_cast<size_t>(-1) / 2, f32, world()), "too large");
  expect_invalid(tutti_gather(block.data(), a, n, f32, -1, world()), "root=-1");
  expect_invalid(tutti_scatter(a, block.data(), n, f32, p, world()), "root=");
  expect_invalid(tutti_bcast(nullptr, n, f32, 0, world()), "buf is NULL");
  expect_invalid(tutti_reduce(block.data(), a, n, f32, static_cast<tutti_op_t>(5), 0, world()), "op=5");
  if (me == 0) {
    expect_invalid(tutti_gather(block.data(), nullptr, n, f32, 0, world()), "recvbuf");
    expect_invalid(tutti_gather(a, a, n, f32, 0, world()), "overlap");
    expect_invalid(tutti_scatter(nullptr, block.data(), n, f32, 0, world()), "sendbuf");
    expect_invalid(tutti_reduce(block.data(), nullptr, n, f32, TUTTI_SUM, 0, world()), "recvbuf");
  }
  if (p > 1 && me != 0) {
    expect_invalid(tutti_gather(TUTTI_IN_PLACE, a, n, f32, 0, world()), "only valid on the root");
    expect_invalid(tutti_scatter(a, TUTTI_IN_PLACE, n, f32, 0, world()), "only valid on the root");
  }
  // The non-blocking variants check the same and their request too.
  tutti_request_t req = nullptr;
  expect_invalid(tutti_ireduce_scatter(nullptr, block.data(), n, f32, TUTTI_SUM, world(), &req), "sendbuf");
  CHECK(req == nullptr);
  expect_invalid(tutti_ibcast(block.data(), n, f32, 0, world(), nullptr), "req is NULL");
  expect_invalid(tutti_igather(block.data(), a, n, f32, 0, world(), nullptr), "req is NULL");
  expect_invalid(tutti_iscatter(a, block.data(), n, f32, 0, world(), nullptr), "req is NULL");
  expect_invalid(tutti_iallgather(block.data(), a, n, f32, world(), nullptr), "req is NULL");
  expect_invalid(tutti_ialltoall(a, a, n, f32, world(), nullptr), "req is NULL");
  expect_invalid(tutti_ibarrier(world(), nullptr), "req is NULL");
  expect_invalid(tutti_isend(block.data(), n, f32, 0, 0, world(), nullptr), "req is NULL");
  expect_invalid(tutti_irecv(block.data(), n, f32, 0, 0, world(), nullptr), "req is NULL");
  expect_invalid(tutti_ibarrier(nullptr, &req), "comm is NULL");
  expect_invalid(tutti_barrier(nullptr), "comm is NULL");
  // Still usable, and every rank got here.
  std::vector<float> sum(n);
  REQUIRE(tutti_allreduce(block.data(), sum.data(), n, f32, TUTTI_SUM, world()) == TUTTI_SUCCESS);
  CHECK(all_ranks(sum[n - 1] == static_cast<float>(p)));
}

TEST_CASE("alltoallv rejects receive blocks that overlap", "[api][validation]") {
  const int p = world_size();
  if (p < 2) return;
  const size_t up = static_cast<size_t>(p);
  std::vector<size_t> counts(up, 2), displs(up);
  for (size_t i = 0; i < up; ++i) displs[i] = 2 * i;
  displs[1] = 1;  // rank 1's block starts inside rank 0's
  std::vector<float> in(2 * up, 1.0f), out(2 * up + 1);
  std::vector<size_t> packed(up);
  for (size_t i = 0; i < up; ++i) packed[i] = 2 * i;
  expect_invalid(tutti_alltoallv(in.data(), counts.data(), packed.data(), out.data(), counts.data(),
                                 displs.data(), TUTTI_FLOAT32, world()),
                 "blocks of ranks 0 and 1 overlap");
  // Overlapping send blocks are fine (each is only read).
  std::vector<size_t> same(up, 0);
  std::vector<float> got(2 * up);
  REQUIRE(tutti_alltoallv(in.data(), counts.data(), same.data(), got.data(), counts.data(),
                          packed.data(), TUTTI_FLOAT32, world()) == TUTTI_SUCCESS);
  CHECK(all_ranks(got == std::vector<float>(2 * up, 1.0f)));
  // Blocks out of rank order (rank i's block at 2 (p - 1 - i)): checked in
  // the order of their displacements, first disjoint, then with rank 0's
  // block starting inside rank 1's.
  std::vector<size_t> reversed(up);
  for (size_t i = 0; i < up; ++i) reversed[i] = 2 * (up - 1 - i);
  std::vector<float> mine(2 * up);
  for (size_t i = 0; i < 2 * up; ++i) mine[i] = static_cast<float>(world_rank() * 100 + i);
  REQUIRE(tutti_alltoallv(mine.data(), counts.data(), packed.data(), got.data(), counts.data(),
                          reversed.data(), TUTTI_FLOAT32, world()) == TUTTI_SUCCESS);
  bool right = true;
  for (size_t q = 0; q < up; ++q)
    for (size_t k = 0; k < 2; ++k)
      right &= got[reversed[q] + k] == static_cast<float>(static_cast<size_t>(q) * 100 +
                                                          2 * static_cast<size_t>(world_rank()) + k);
  CHECK(all_ranks(right));
  reversed[0] = reversed[1] + 1;
  expect_invalid(tutti_alltoallv(in.data(), counts.data(), packed.data(), out.data(), counts.data(),
                                 reversed.data(), TUTTI_FLOAT32, world()),
                 "blocks of ranks 1 and 0 overlap");
}

TEST_CASE("requests, communicators and controls name each invalid argument", "[api][validation]") {
  int value = 0, done = 0;
  tutti_request_t req = nullptr;
  expect_invalid(tutti_wait(nullptr), "req is NULL");
  expect_invalid(tutti_test(nullptr, &done), "req is NULL");
  expect_invalid(tutti_test(&req, nullptr), "done is NULL");
  expect_invalid(tutti_wait_timeout(&req, -1.0), "seconds");
  expect_invalid(tutti_wait_timeout(&req, std::nan("")), "seconds");
  CHECK(tutti_wait(&req) == TUTTI_SUCCESS);  // a null request is complete
  expect_invalid(tutti_comm_rank(nullptr, &value), "comm is NULL");
  expect_invalid(tutti_comm_rank(world(), nullptr), "rank is NULL");
  expect_invalid(tutti_comm_size(world(), nullptr), "size is NULL");
  expect_invalid(tutti_comm_stats(world(), nullptr), "stats is NULL");
  expect_invalid(tutti_comm_abort(nullptr), "comm is NULL");
  expect_invalid(tutti_comm_force_algorithm(world(), nullptr, "ring"), "collective is NULL");
  expect_invalid(tutti_comm_set_stream(nullptr, nullptr), "comm is NULL");
  CHECK(std::string(tutti_comm_last_algorithm(nullptr)).empty());
  CHECK(tutti_comm_destroy(nullptr) == TUTTI_SUCCESS);  // like free(NULL)
  expect_invalid(tutti_comm_create(MPI_COMM_WORLD, nullptr), "comm is NULL");
  tutti_comm_t made = nullptr;
  expect_invalid(tutti_comm_create(MPI_COMM_NULL, &made), "MPI_COMM_NULL");
  CHECK(made == nullptr);
#if !TUTTI_HAVE_CUDA
  int fake_stream = 0;
  expect_error(tutti_comm_set_stream(world(), &fake_stream), TUTTI_ERR_UNSUPPORTED, "without CUDA");
#endif
}

TEST_CASE("an inter-communicator is refused", "[api][validation]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  MPI_Comm half = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half) == MPI_SUCCESS);
  const int remote_leader = me % 2 == 0 ? 1 : 0;  // world rank of the other half's rank 0
  REQUIRE(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, remote_leader, 77, &inter) == MPI_SUCCESS);
  tutti_comm_t comm = nullptr;
  expect_invalid(tutti_comm_create(inter, &comm), "inter-communicator");
  CHECK(comm == nullptr);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

TEST_CASE("a communicator with requests still open cannot be destroyed", "[api][validation]") {
  tutti_comm_t comm = nullptr;
  REQUIRE(tutti_comm_create(MPI_COMM_WORLD, &comm) == TUTTI_SUCCESS);
  float x = 1.0f, y = 0.0f;
  tutti_request_t pending = nullptr, empty = nullptr;
  REQUIRE(tutti_iallreduce(&x, &y, 1, TUTTI_FLOAT32, TUTTI_SUM, comm, &pending) == TUTTI_SUCCESS);
  // A zero-count call completes at once but its request is still open.
  REQUIRE(tutti_iallreduce(&x, &y, 0, TUTTI_FLOAT32, TUTTI_SUM, comm, &empty) == TUTTI_SUCCESS);
  expect_invalid(tutti_comm_destroy(comm), "2 request(s)");
  REQUIRE(tutti_wait(&pending) == TUTTI_SUCCESS);
  expect_invalid(tutti_comm_destroy(comm), "1 request(s)");
  int done = 0;
  REQUIRE(tutti_test(&empty, &done) == TUTTI_SUCCESS);
  CHECK(done == 1);
  CHECK(y == static_cast<float>(world_size()));
  CHECK(tutti_comm_destroy(comm) == TUTTI_SUCCESS);
}

}  // namespace tutti::testing
