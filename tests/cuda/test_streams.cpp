// Stream-ordered calls (tutti_comm_set_stream) and the staging transport's
// cancellation, on device buffers.
#include <catch2/catch.hpp>
#include <mpi.h>

#include <chrono>
#include <thread>
#include <vector>

#include "base/status.hpp"
#include "cuda_harness.hpp"

namespace tutti::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Host work enqueued on a stream: everything after it on that stream waits.
void CUDART_CB sleep_200ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }

struct StreamFixture {
  cudaStream_t stream = nullptr;
  float* device = nullptr;
  float* pinned = nullptr;
  size_t n = 1 << 20;
  StreamFixture() {
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaMalloc(&device, n * sizeof(float)) == cudaSuccess);
    REQUIRE(cudaMallocHost(&pinned, n * sizeof(float)) == cudaSuccess);
    REQUIRE(cudaMemset(device, 0, n * sizeof(float)) == cudaSuccess);
    REQUIRE(tutti_comm_set_stream(world(), stream) == TUTTI_SUCCESS);
  }
  ~StreamFixture() {
    tutti_comm_set_stream(world(), nullptr);
    cudaStreamSynchronize(stream);
    cudaFreeHost(pinned);
    cudaFree(device);
    cudaStreamDestroy(stream);
  }
  // The input arrives on the stream only after 200 ms of other work.
  void enqueue_late_input() {
    const float v = static_cast<float>(world_rank() + 1);
    for (size_t i = 0; i < n; ++i) pinned[i] = v;
    REQUIRE(cudaLaunchHostFunc(stream, sleep_200ms, nullptr) == cudaSuccess);
    REQUIRE(cudaMemcpyAsync(device, pinned, n * sizeof(float), cudaMemcpyHostToDevice, stream) ==
            cudaSuccess);
  }
  // Reads the result back through the stream: ordered after the call.
  bool result_is_rank_sum() {
    for (size_t i = 0; i < n; ++i) pinned[i] = -1;
    REQUIRE(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, stream) ==
            cudaSuccess);
    REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
    const int p = world_size();
    const float want = static_cast<float>(p * (p + 1) / 2);
    for (size_t i = 0; i < n; ++i)
      if (pinned[i] != want) return false;
    return true;
  }
};

TEST_CASE("a non-blocking call returns at once and waits for the stream's earlier work",
          "[streams]") {
  StreamFixture f;
  f.enqueue_late_input();
  tutti_request_t req = nullptr;
  const auto t0 = Clock::now();
  int st = tutti_iallreduce(TUTTI_IN_PLACE, f.device, f.n, TUTTI_FLOAT32, TUTTI_SUM, world(), &req);
  const double call_s = std::chrono::duration<double>(Clock::now() - t0).count();
  // The host was not held up by the 200 ms on the stream...
  CHECK(call_s < 0.1);
  CHECK(cudaStreamQuery(f.stream) == cudaErrorNotReady);
  if (st == TUTTI_SUCCESS) st = tutti_wait(&req);
  INFO(tutti_last_error());
  CHECK(all_ranks(st == TUTTI_SUCCESS));
  // ...and the collective still read the input that arrived late.
  CHECK(all_ranks(f.result_is_rank_sum()));
}

TEST_CASE("a blocking call on a stream waits for the stream's earlier work", "[streams]") {
  StreamFixture f;
  f.enqueue_late_input();
  const int st = tutti_allreduce(TUTTI_IN_PLACE, f.device, f.n, TUTTI_FLOAT32, TUTTI_SUM, world());
  INFO(tutti_last_error());
  CHECK(all_ranks(st == TUTTI_SUCCESS));
  CHECK(all_ranks(f.result_is_rank_sum()));
}

// The rule CUDA.md gives for host reads in the stream-ordered style:
// tutti_wait says the call is complete (its device work is ordered before
// later work on the stream), not that that work has finished; a host read
// needs cudaStreamSynchronize(stream) first, and that suffices: the read
// here goes through a third stream, ordered by nothing but that
// synchronisation.
TEST_CASE("after tutti_wait, synchronising the stream makes the result readable", "[streams]") {
  StreamFixture f;
  f.enqueue_late_input();
  tutti_request_t req = nullptr;
  int st = tutti_iallreduce(TUTTI_IN_PLACE, f.device, f.n, TUTTI_FLOAT32, TUTTI_SUM, world(), &req);
  if (st == TUTTI_SUCCESS) st = tutti_wait(&req);
  INFO(tutti_last_error());
  CHECK(all_ranks(st == TUTTI_SUCCESS));
  REQUIRE(cudaStreamSynchronize(f.stream) == cudaSuccess);
  cudaStream_t reader = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking) == cudaSuccess);
  for (size_t i = 0; i < f.n; ++i) f.pinned[i] = -1;
  REQUIRE(cudaMemcpyAsync(f.pinned, f.device, f.n * sizeof(float), cudaMemcpyDeviceToHost, reader) ==
          cudaSuccess);
  REQUIRE(cudaStreamSynchronize(reader) == cudaSuccess);
  cudaStreamDestroy(reader);
  const int p = world_size();
  const float want = static_cast<float>(p * (p + 1) / 2);
  bool ok = true;
  for (size_t i = 0; i < f.n; ++i) ok = ok && f.pinned[i] == want;
  CHECK(all_ranks(ok));
}

TEST_CASE("calls start in call order behind a call waiting for its stream", "[streams]") {
  StreamFixture f;
  f.enqueue_late_input();
  // A host-buffer collective issued after the stream-ordered one: it must
  // not overtake it (MPI's order of collectives; message order per pair).
  std::vector<int> host(8, world_rank() + 1);
  tutti_request_t a = nullptr, b = nullptr;
  int st = tutti_iallreduce(TUTTI_IN_PLACE, f.device, f.n, TUTTI_FLOAT32, TUTTI_SUM, world(), &a);
  if (st == TUTTI_SUCCESS)
    st = tutti_iallreduce(TUTTI_IN_PLACE, host.data(), host.size(), TUTTI_INT32, TUTTI_SUM, world(), &b);
  if (st == TUTTI_SUCCESS) st = tutti_wait(&b);
  if (st == TUTTI_SUCCESS) st = tutti_wait(&a);
  INFO(tutti_last_error());
  CHECK(all_ranks(st == TUTTI_SUCCESS));
  const int p = world_size();
  CHECK(all_ranks(host[0] == p * (p + 1) / 2 && host[7] == host[0]));
  CHECK(all_ranks(f.result_is_rank_sum()));
}

TEST_CASE("tutti_comm_set_stream accepts a stream and NULL", "[streams]") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  CHECK(tutti_comm_set_stream(world(), s) == TUTTI_SUCCESS);
  CHECK(tutti_comm_set_stream(world(), nullptr) == TUTTI_SUCCESS);
  CHECK(tutti_comm_set_stream(nullptr, s) == TUTTI_ERR_INVALID_ARGUMENT);
  cudaStreamDestroy(s);
}

TEST_CASE("an unmatched device receive and send time out and are cancelled", "[staging]") {
  if (world_size() < 2) return;
  // A communicator of its own: a timeout marks it failed.
  tutti_comm_t comm = nullptr;
  REQUIRE(tutti_comm_create(MPI_COMM_WORLD, &comm) == TUTTI_SUCCESS);
  const size_t n = size_t{4} << 20;  // large enough for a rendezvous send
  float* buf = nullptr;
  REQUIRE(cudaMalloc(&buf, n * sizeof(float)) == cudaSuccess);
  tutti_request_t req = nullptr;
  int st = TUTTI_SUCCESS;
  if (world_rank() == 0) st = tutti_irecv(buf, n, TUTTI_FLOAT32, 1, 77, comm, &req);
  if (world_rank() == 1) st = tutti_isend(buf, n, TUTTI_FLOAT32, 0, 78, comm, &req);
  if (req) st = tutti_wait_timeout(&req, 0.5);
  // Rank 1's send may have completed eagerly; rank 0's receive cannot.
  if (world_rank() == 0) CHECK(st == TUTTI_ERR_TIMEOUT);
  if (world_rank() == 1) CHECK((st == TUTTI_ERR_TIMEOUT || st == TUTTI_SUCCESS));
  CHECK(req == nullptr);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(tutti_comm_destroy(comm) == TUTTI_SUCCESS);
  cudaFree(buf);
}

}  // namespace
}  // namespace tutti::testing
