// The C API beyond single collectives: several non-blocking collectives in
// flight at once, point-to-point with tags, results equal to the MPI
// library's own collectives, and bad input rejected with a clear error while
// the communicator stays usable.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mpi_harness.hpp"

namespace tutti::testing {
namespace {

std::vector<float> iota_floats(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i % 17);
  return v;
}

// int32 counts of the meeting tests' calls through the slots: 388 bytes,
// just above what the flag lines carry; 1 KiB; 4092 bytes, just below the
// direct runs' limit; 4096, the engine's alone.
constexpr size_t kThroughSlots[] = {97, 256, 1023, 1024};

}  // namespace

TEST_CASE("several non-blocking collectives in flight, completed in any order", "[api]") {
  const int p = world_size(), me = world_rank();
  const size_t n = 3001;
  std::vector<float> a_in = iota_floats(n, static_cast<float>(me)), a_out(n);
  std::vector<int32_t> b_buf(n, me == 0 ? 42 : -1);
  std::vector<int32_t> c_in(5, me), c_out(5 * static_cast<size_t>(p));
  std::vector<double> d_in(n * static_cast<size_t>(p), 1.0), d_out(n);

  tutti_request_t reqs[5] = {};
  REQUIRE(tutti_iallreduce(a_in.data(), a_out.data(), n, TUTTI_FLOAT32, TUTTI_SUM, world(), &reqs[0]) == 0);
  REQUIRE(tutti_ibcast(b_buf.data(), n, TUTTI_INT32, 0, world(), &reqs[1]) == 0);
  REQUIRE(tutti_iallgather(c_in.data(), c_out.data(), 5, TUTTI_INT32, world(), &reqs[2]) == 0);
  REQUIRE(tutti_ireduce_scatter(d_in.data(), d_out.data(), n, TUTTI_FLOAT64, TUTTI_SUM, world(), &reqs[3]) == 0);
  REQUIRE(tutti_ibarrier(world(), &reqs[4]) == 0);
  // Poll one with tutti_test, wait for the rest in reverse order.
  int done = 0;
  while (!done) REQUIRE(tutti_test(&reqs[4], &done) == TUTTI_SUCCESS);
  CHECK(reqs[4] == nullptr);
  for (int i = 3; i >= 0; --i) {
    REQUIRE(tutti_wait(&reqs[i]) == TUTTI_SUCCESS);
    CHECK(reqs[i] == nullptr);
  }
  bool ok = true;
  for (size_t i = 0; i < n; ++i) {
    float want = 0;
    for (int r = 0; r < p; ++r) want += static_cast<float>(r) + static_cast<float>(i % 17);
    ok = ok && a_out[i] == want && b_buf[i] == 42 && d_out[i] == static_cast<double>(p);
  }
  for (int r = 0; r < p; ++r)
    for (int j = 0; j < 5; ++j) ok = ok && c_out[static_cast<size_t>(r) * 5 + static_cast<size_t>(j)] == r;
  CHECK(all_ranks(ok));
}

// MPI's progress rule across communicators (api/progress_elsewhere.hpp):
// rank 0 starts an ibcast on B and makes a blocking barrier on A; the
// others wait for the ibcast before their barrier. A 16 MiB bcast needs the
// root to go on writing after its first part: a barrier that progressed
// only A waited until TUTTI_TIMEOUT.
TEST_CASE("a blocking call on one communicator progresses the calls in flight on another", "[api]") {
  const int me = world_rank();
  tutti_comm_t b = nullptr;
  REQUIRE(all_ranks(tutti_comm_create(MPI_COMM_WORLD, &b) == TUTTI_SUCCESS));
  const size_t count = size_t{4} << 20;
  std::vector<int32_t> data(count, me == 0 ? 7 : 0);
  tutti_request_t req = nullptr;
  int st = tutti_ibcast(data.data(), count, TUTTI_INT32, 0, b, &req);
  if (me == 0) {
    if (st == TUTTI_SUCCESS) st = tutti_barrier(world());
    if (st == TUTTI_SUCCESS) st = tutti_wait(&req);
  } else {
    if (st == TUTTI_SUCCESS) st = tutti_wait(&req);
    if (st == TUTTI_SUCCESS) st = tutti_barrier(world());
  }
  INFO(tutti_last_error());
  CHECK(all_ranks(st == TUTTI_SUCCESS && data[count - 1] == 7));
  CHECK(tutti_comm_destroy(b) == TUTTI_SUCCESS);
}

namespace {

// Rank 0: an ibcast of `count` int32 on `b`, then an ibarrier on `a` polled
// by tutti_test for up to `seconds` (an MPI program polling MPI_Test); then
// it waits for both. The others wait for the ibcast, then the barrier. A
// poll that found its own call idle must progress the other communicator
// (MPI's progress rule), or rank 0 polls until it gives up (tutti_test has
// no timeout of its own); then the root's wait lets the others go on.
struct PolledBarrier {
  bool polled_to_the_end = false;  // the poll ended the barrier (or failed)
  bool right = false;              // every call succeeded, the data arrived
  std::string error;
};
PolledBarrier ibcast_then_polled_barrier(tutti_comm_t a, tutti_comm_t b, size_t count, double seconds) {
  const int me = world_rank();
  std::vector<int32_t> data(count, me == 0 ? 7 : 0);
  tutti_request_t req = nullptr, barrier = nullptr;
  PolledBarrier out;
  out.polled_to_the_end = true;
  int st = tutti_ibcast(data.data(), count, TUTTI_INT32, 0, b, &req);
  if (me == 0) {
    if (st == TUTTI_SUCCESS) st = tutti_ibarrier(a, &barrier);
    const double give_up = MPI_Wtime() + seconds;
    int done = 0;
    while (st == TUTTI_SUCCESS && !done && MPI_Wtime() < give_up) st = tutti_test(&barrier, &done);
    out.polled_to_the_end = st != TUTTI_SUCCESS || done;
    if (st == TUTTI_SUCCESS) st = tutti_wait(&req);
    if (st == TUTTI_SUCCESS) st = tutti_wait(&barrier);  // done already where the poll ended it
  } else {
    if (st == TUTTI_SUCCESS) st = tutti_wait(&req);
    if (st == TUTTI_SUCCESS) st = tutti_barrier(a);
  }
  if (st != TUTTI_SUCCESS) out.error = tutti_last_error();
  out.right = st == TUTTI_SUCCESS && data[count - 1] == 7;
  return out;
}

}  // namespace

TEST_CASE("polling a call with tutti_test progresses the calls in flight on another communicator",
          "[api]") {
  tutti_comm_t b = nullptr;
  REQUIRE(all_ranks(tutti_comm_create(MPI_COMM_WORLD, &b) == TUTTI_SUCCESS));
  const PolledBarrier run = ibcast_then_polled_barrier(world(), b, size_t{4} << 20, 20);
  INFO(run.error);
  CHECK(all_ranks(run.polled_to_the_end));
  CHECK(all_ranks(run.right));
  CHECK(tutti_comm_destroy(b) == TUTTI_SUCCESS);
}

// The same with two threads, each on communicators of its own (a program
// with a communicator per thread; the torch backend's worker per group):
// each thread's poll must progress its own other communicator. Before,
// passes ran only while one thread alone had ever called tutti, and rank 0
// of each thread polled until it gave up.
TEST_CASE("threads on communicators of their own each progress their own calls in flight",
          "[api][threads]") {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  REQUIRE(level == MPI_THREAD_MULTIPLE);  // main.cpp asks for it
  constexpr int kThreads = 2;
  struct Lane {
    tutti_comm_t a = nullptr, b = nullptr;
    PolledBarrier run;
  };
  std::vector<Lane> lanes(kThreads);
  for (Lane& lane : lanes) {
    REQUIRE(all_ranks(tutti_comm_create(MPI_COMM_WORLD, &lane.a) == TUTTI_SUCCESS));
    REQUIRE(all_ranks(tutti_comm_create(MPI_COMM_WORLD, &lane.b) == TUTTI_SUCCESS));
  }
  std::vector<std::thread> threads;
  for (Lane& lane : lanes)  // 4 MiB each: the root writes it in parts
    threads.emplace_back([&lane] { lane.run = ibcast_then_polled_barrier(lane.a, lane.b, size_t{1} << 20, 60); });
  for (std::thread& t : threads) t.join();
  for (Lane& lane : lanes) {
    INFO(lane.run.error);
    CHECK(all_ranks(lane.run.polled_to_the_end));
    CHECK(all_ranks(lane.run.right));
    CHECK(tutti_comm_destroy(lane.a) == TUTTI_SUCCESS);
    CHECK(tutti_comm_destroy(lane.b) == TUTTI_SUCCESS);
  }
}

// A blocking call small enough for the shm allreduce's direct run
// (engine/direct_call.hpp) and a non-blocking one (the engine) follow the same flag
// protocol and slot places: here each rank picks its path per call at
// random, so ranks running the same call on different paths meet, in both
// orders. Blocks of ten calls take turns: 0 to 48 bytes reusing the flag
// lines (and, one call in five, 384 bytes, the most a signal carries: 8
// lines), then one size through the slots (388 bytes, just above the
// lines; 1 KiB; 4092 bytes, just below the direct runs' limit; 4096, the
// engine's alone), long enough for the slots to move and for probe calls.
TEST_CASE("small allreduces meet whether a rank runs them directly or through the engine", "[api]") {
  const int p = world_size(), me = world_rank();
  std::mt19937_64 next(static_cast<uint64_t>(me) + 1);  // each rank its own path choices
  auto size_of = [](int call) -> size_t {  // the same on every rank
    const int block = call / 10;
    if (block % 2 == 0) return call % 5 == 4 ? 96 : static_cast<size_t>(call % 13);
    return kThroughSlots[(block / 2) % std::size(kThroughSlots)];
  };
  bool ok = true;
  int mismatch_call = -1;
  for (int call = 0; call < 640; ++call) {
    const size_t n = size_of(call);
    const bool in_place = call % 5 == 0;
    std::vector<int32_t> in(n), out(n, -7);
    for (size_t i = 0; i < n; ++i) in[i] = me * 1000 + call + static_cast<int32_t>(i);
    if (in_place) out = in;
    const void* send = in_place ? TUTTI_IN_PLACE : static_cast<const void*>(in.data());
    int st = TUTTI_SUCCESS;
    if (next() & 1) {
      st = tutti_allreduce(send, out.data(), n, TUTTI_INT32, TUTTI_SUM, world());
    } else {
      tutti_request_t req = nullptr;
      st = tutti_iallreduce(send, out.data(), n, TUTTI_INT32, TUTTI_SUM, world(), &req);
      if (st == TUTTI_SUCCESS) st = tutti_wait(&req);
    }
    ok = ok && st == TUTTI_SUCCESS;
    for (size_t i = 0; i < n; ++i) {
      const int32_t want = 1000 * (p * (p - 1) / 2) + p * (call + static_cast<int32_t>(i));
      if (out[i] != want && mismatch_call < 0) mismatch_call = call;
    }
  }
  INFO("first wrong call on rank " << me << ": " << mismatch_call);
  CHECK(all_ranks(ok && mismatch_call < 0));
}

// The rooted one-way calls: the root's bcast signals and the others'
// reduce signals are not answered, so a sender may run up to four calls
// ahead of a receiver, whichever path each takes. Blocks of twelve calls
// take turns, as in the allreduce test above: sizes for the flag lines,
// then one size through the slots (388 bytes to 4 KiB).
TEST_CASE("small bcasts and reduces meet whether a rank runs them directly or through the engine",
          "[api]") {
  const int p = world_size(), me = world_rank();
  std::mt19937_64 next(static_cast<uint64_t>(me) + 101);  // each rank its own path choices
  bool ok = true;
  int mismatch_call = -1;
  auto size_of = [](int call) -> size_t {
    const int block = call / 12;
    if (block % 2 == 0) return call % 7 == 6 ? 96 : static_cast<size_t>(call % 11);
    return kThroughSlots[(block / 2) % std::size(kThroughSlots)];
  };
  for (int call = 0; call < 768; ++call) {
    // The same on every rank: collective, size, root, in place.
    const bool is_bcast = call % 3 != 1;
    const size_t n = size_of(call);
    const int root = (call / 2) % p;
    const bool in_place = !is_bcast && me == root && call % 4 == 0;
    std::vector<int32_t> in(n), out(n, -7);
    for (size_t i = 0; i < n; ++i) in[i] = me * 1000 + call + static_cast<int32_t>(i);
    if (is_bcast || in_place) out = in;
    const void* send = in_place ? TUTTI_IN_PLACE : static_cast<const void*>(in.data());
    const bool blocking = next() & 1;
    tutti_request_t req = nullptr;
    int st = TUTTI_SUCCESS;
    if (is_bcast)
      st = blocking ? tutti_bcast(out.data(), n, TUTTI_INT32, root, world())
                    : tutti_ibcast(out.data(), n, TUTTI_INT32, root, world(), &req);
    else
      st = blocking ? tutti_reduce(send, out.data(), n, TUTTI_INT32, TUTTI_SUM, root, world())
                    : tutti_ireduce(send, out.data(), n, TUTTI_INT32, TUTTI_SUM, root, world(), &req);
    if (st == TUTTI_SUCCESS && !blocking) st = tutti_wait(&req);
    ok = ok && st == TUTTI_SUCCESS;
    for (size_t i = 0; i < n; ++i) {
      const int32_t base = call + static_cast<int32_t>(i);
      if (!is_bcast && me != root) break;  // recvbuf not significant
      const int32_t want = is_bcast ? root * 1000 + base : 1000 * (p * (p - 1) / 2) + p * base;
      if (out[i] != want && mismatch_call < 0) mismatch_call = call;
    }
  }
  INFO("first wrong call on rank " << me << ": " << mismatch_call);
  CHECK(all_ranks(ok && mismatch_call < 0));
}

TEST_CASE("send and receive with tags, matched by tag not by order", "[api]") {
  const int p = world_size(), me = world_rank();
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  std::vector<int64_t> first(100, me * 10 + 1), second(100000, me * 10 + 2);
  std::vector<int64_t> got_first(100), got_second(100000);
  tutti_request_t s1, s2, r2;
  REQUIRE(tutti_isend(first.data(), first.size(), TUTTI_INT64, right, 1, world(), &s1) == 0);
  REQUIRE(tutti_isend(second.data(), second.size(), TUTTI_INT64, right, 2, world(), &s2) == 0);
  // Receive tag 2 before tag 1.
  REQUIRE(tutti_irecv(got_second.data(), got_second.size(), TUTTI_INT64, left, 2, world(), &r2) == 0);
  REQUIRE(tutti_recv(got_first.data(), got_first.size(), TUTTI_INT64, left, 1, world()) == 0);
  REQUIRE(tutti_wait(&r2) == 0);
  REQUIRE(tutti_wait(&s1) == 0);
  REQUIRE(tutti_wait(&s2) == 0);
  bool ok = got_first[0] == left * 10 + 1 && got_first[99] == left * 10 + 1 &&
            got_second[0] == left * 10 + 2 && got_second[99999] == left * 10 + 2;
  CHECK(all_ranks(ok));
}

// Receives from any source, as torch's recvAnysource needs: every other rank
// sends rank 0 two small and one large message (the large ones above the
// acknowledgement threshold inside a node); rank 0 takes them all with
// TUTTI_ANY_SOURCE and learns each sender. Per sender and tag, messages
// arrive in the order sent.
TEST_CASE("receives from any source report the sender and keep each sender's order", "[api]") {
  const int p = world_size(), me = world_rank();
  constexpr size_t kSmall = 37, kLarge = 70001;  // int64: 296 B, 560 KB
  auto value = [](int rank, int message, size_t i) {
    return static_cast<int64_t>(rank) * 1000000 + message * 100000 + static_cast<int64_t>(i % 997);
  };
  if (me != 0) {
    std::vector<std::vector<int64_t>> out(3);
    std::vector<tutti_request_t> reqs(3);
    for (int m = 0; m < 3; ++m) {
      out[m].resize(m < 2 ? kSmall : kLarge);
      for (size_t i = 0; i < out[m].size(); ++i) out[m][i] = value(me, m, i);
      REQUIRE(tutti_isend(out[m].data(), out[m].size(), TUTTI_INT64, 0, m < 2 ? 5 : 6, world(),
                          &reqs[m]) == 0);
    }
    for (tutti_request_t& r : reqs) REQUIRE(tutti_wait(&r) == 0);
  } else {
    const size_t senders = static_cast<size_t>(p - 1);
    // Small ones: blocking, one after another; large ones: all posted at once.
    std::vector<int> small_from(2 * senders, -7), large_from(senders, -7);
    std::vector<std::vector<int64_t>> small(2 * senders, std::vector<int64_t>(kSmall));
    std::vector<std::vector<int64_t>> large(senders, std::vector<int64_t>(kLarge));
    std::vector<tutti_request_t> reqs(senders);
    for (size_t k = 0; k < senders; ++k)
      REQUIRE(tutti_irecv_from(large[k].data(), kLarge, TUTTI_INT64, TUTTI_ANY_SOURCE, 6, world(),
                               &large_from[k], &reqs[k]) == 0);
    for (size_t k = 0; k < 2 * senders; ++k)
      REQUIRE(tutti_recv_from(small[k].data(), kSmall, TUTTI_INT64, TUTTI_ANY_SOURCE, 5, world(),
                              &small_from[k]) == 0);
    for (tutti_request_t& r : reqs) REQUIRE(tutti_wait(&r) == 0);
    std::vector<int> seen(static_cast<size_t>(p), 0);
    for (size_t k = 0; k < 2 * senders; ++k) {
      const int from = small_from[k];
      REQUIRE(from >= 1);
      REQUIRE(from < p);
      const int message = seen[static_cast<size_t>(from)]++;  // the first from a rank is its 0
      INFO("small receive " << k << " from rank " << from);
      for (size_t i = 0; i < kSmall; ++i) REQUIRE(small[k][i] == value(from, message, i));
    }
    for (int r = 1; r < p; ++r) CHECK(seen[static_cast<size_t>(r)] == 2);
    std::vector<int> large_seen(static_cast<size_t>(p), 0);
    for (size_t k = 0; k < senders; ++k) {
      const int from = large_from[k];
      REQUIRE(from >= 1);
      REQUIRE(from < p);
      ++large_seen[static_cast<size_t>(from)];
      INFO("large receive " << k << " from rank " << from);
      for (size_t i = 0; i < kLarge; i += 101) REQUIRE(large[k][i] == value(from, 2, i));
    }
    for (int r = 1; r < p; ++r) CHECK(large_seen[static_cast<size_t>(r)] == 1);
  }
  // A rank's message to itself is a message from any source too.
  std::vector<int32_t> mine(1000, me + 3), got(1000, -1);
  tutti_request_t send_req;
  int from = -7;
  REQUIRE(tutti_isend(mine.data(), mine.size(), TUTTI_INT32, me, 8, world(), &send_req) == 0);
  REQUIRE(tutti_recv_from(got.data(), got.size(), TUTTI_INT32, TUTTI_ANY_SOURCE, 8, world(), &from) == 0);
  REQUIRE(tutti_wait(&send_req) == 0);
  CHECK(from == me);
  CHECK(got == mine);
  CHECK(all_ranks(tutti_barrier(world()) == TUTTI_SUCCESS));
}

TEST_CASE("a receive from any source that nobody answers times out and leaves the communicator usable",
          "[api]") {
  std::vector<int32_t> buf(5000);
  int from = -7;
  tutti_request_t req;
  REQUIRE(tutti_irecv_from(buf.data(), buf.size(), TUTTI_INT32, TUTTI_ANY_SOURCE, 77, world(), &from,
                           &req) == 0);
  CHECK(tutti_wait_timeout(&req, 0.2) == TUTTI_ERR_TIMEOUT);
  INFO(tutti_last_error());
  CHECK(std::string(tutti_last_error()).find("any rank") != std::string::npos);
  CHECK(req == nullptr);
  CHECK(from == -7);
  // Every rank's receive is withdrawn before anyone sends: the cancelled
  // receives must not take the later messages with their tag.
  MPI_Barrier(MPI_COMM_WORLD);
  const int p = world_size(), me = world_rank();
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  std::vector<int32_t> out(5000, me), in(5000, -1);
  tutti_request_t s;
  REQUIRE(tutti_isend(out.data(), out.size(), TUTTI_INT32, right, 77, world(), &s) == 0);
  REQUIRE(tutti_recv_from(in.data(), in.size(), TUTTI_INT32, TUTTI_ANY_SOURCE, 77, world(), &from) == 0);
  REQUIRE(tutti_wait(&s) == 0);
  CHECK(from == left);
  CHECK(in == std::vector<int32_t>(5000, left));
  CHECK(all_ranks(tutti_barrier(world()) == TUTTI_SUCCESS));
}

TEST_CASE("a receive from any source of the wrong size names the sender, and the sender completes",
          "[api]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  // 256 KiB: acknowledged inside a node; the sender must not wait for ever.
  std::vector<int32_t> buf(65536, 7);
  int st = TUTTI_SUCCESS;
  if (me == 0) st = tutti_send(buf.data(), buf.size(), TUTTI_INT32, 1, 10, world());
  if (me == 1) {
    int from = -7;
    st = tutti_recv_from(buf.data(), 16, TUTTI_INT32, TUTTI_ANY_SOURCE, 10, world(), &from);
    CHECK(st == TUTTI_ERR_MISMATCH);
    INFO(tutti_last_error());
    CHECK(std::string(tutti_last_error()).find("rank 0") != std::string::npos);
    CHECK(from == -7);
    st = TUTTI_SUCCESS;
  }
  CHECK(st == TUTTI_SUCCESS);
  CHECK(all_ranks(tutti_barrier(world()) == TUTTI_SUCCESS));
}

// A timeout names what did arrive from the awaited rank under another tag
// (UCX transport: its unexpected queue): a message that never came reads
// differently from one the ranks label differently.
TEST_CASE("a receive that times out names the unmatched message its peer sent", "[api]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  std::vector<int32_t> out(4, me), in(4, -1);
  tutti_request_t s = nullptr, r = nullptr;
  REQUIRE(tutti_isend(out.data(), out.size(), TUTTI_INT32, right, 88, world(), &s) == 0);
  REQUIRE(tutti_irecv(in.data(), in.size(), TUTTI_INT32, left, 89, world(), &r) == 0);
  MPI_Barrier(MPI_COMM_WORLD);  // every tag-88 message has been sent
  const double give_up = MPI_Wtime() + 10;  // it has also arrived, once a poll saw it
  int done = 0;
  while (MPI_Wtime() < give_up && tutti_test(&s, &done) == TUTTI_SUCCESS && !done) {
  }
  CHECK(tutti_wait_timeout(&r, 0.5) == TUTTI_ERR_TIMEOUT);
  const std::string error = tutti_last_error();
  INFO(error);
  const char* transport = std::getenv("TUTTI_TRANSPORT");
  if (transport == nullptr || std::string(transport) == "ucx")
    CHECK(error.find("unmatched here from rank " + std::to_string(left) + ": point-to-point tag 88, 16 bytes") != std::string::npos);
  else  // the MPI transport does not look
    CHECK(error.find("unmatched") == std::string::npos);
  MPI_Barrier(MPI_COMM_WORLD);
  REQUIRE(tutti_recv(in.data(), in.size(), TUTTI_INT32, left, 88, world()) == 0);
  CHECK(in == std::vector<int32_t>(4, left));
  CHECK(all_ranks(tutti_barrier(world()) == TUTTI_SUCCESS));
}

TEST_CASE("a receive of the wrong size is a mismatch, not a crash", "[api]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  std::vector<int32_t> buf(64, 7);
  int st = TUTTI_SUCCESS;
  if (me == 0) st = tutti_send(buf.data(), 64, TUTTI_INT32, 1, 9, world());
  if (me == 1) {
    st = tutti_recv(buf.data(), 16, TUTTI_INT32, 0, 9, world());
    CHECK(st == TUTTI_ERR_MISMATCH);
    INFO(tutti_last_error());
    CHECK(std::string(tutti_last_error()).find("rank 0") != std::string::npos);
    st = TUTTI_SUCCESS;
  }
  CHECK(st == TUTTI_SUCCESS);
  // The communicator is still usable.
  CHECK(all_ranks(tutti_barrier(world()) == TUTTI_SUCCESS));
}

TEST_CASE("results equal the MPI library's own collectives", "[api]") {
  const int p = world_size(), me = world_rank();
  const size_t n = 4099;
  std::vector<int32_t> in(n * static_cast<size_t>(p));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>((i * 31 + static_cast<size_t>(me) * 7) % 1000) - 500;
  bool ok = true;
  {
    std::vector<int32_t> mine(n), theirs(n);
    REQUIRE(tutti_allreduce(in.data(), mine.data(), n, TUTTI_INT32, TUTTI_MAX, world()) == 0);
    MPI_Allreduce(in.data(), theirs.data(), static_cast<int>(n), MPI_INT32_T, MPI_MAX, MPI_COMM_WORLD);
    ok = ok && mine == theirs;
  }
  {
    std::vector<int32_t> mine(n), theirs(n);
    REQUIRE(tutti_reduce_scatter(in.data(), mine.data(), n, TUTTI_INT32, TUTTI_SUM, world()) == 0);
    MPI_Reduce_scatter_block(in.data(), theirs.data(), static_cast<int>(n), MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
    ok = ok && mine == theirs;
  }
  {
    std::vector<int32_t> mine(in.size()), theirs(in.size());
    REQUIRE(tutti_alltoall(in.data(), mine.data(), n, TUTTI_INT32, world()) == 0);
    MPI_Alltoall(in.data(), static_cast<int>(n), MPI_INT32_T, theirs.data(), static_cast<int>(n), MPI_INT32_T, MPI_COMM_WORLD);
    ok = ok && mine == theirs;
  }
  {
    std::vector<int32_t> mine(in.size()), theirs(in.size());
    REQUIRE(tutti_allgather(in.data(), mine.data(), n, TUTTI_INT32, world()) == 0);
    MPI_Allgather(in.data(), static_cast<int>(n), MPI_INT32_T, theirs.data(), static_cast<int>(n), MPI_INT32_T, MPI_COMM_WORLD);
    ok = ok && mine == theirs;
  }
  CHECK(all_ranks(ok));
}

TEST_CASE("bad input is rejected with a clear message and the communicator stays usable", "[api]") {
  const int p = world_size();
  std::vector<float> buf(16, 1.0f), out(16 * static_cast<size_t>(p));
  auto expect_invalid = [](int st, const char* needle) {
    CHECK(st == TUTTI_ERR_INVALID_ARGUMENT);
    const std::string msg = tutti_last_error();
    INFO("message: " << msg);
    CHECK(msg.find(needle) != std::string::npos);
  };
  expect_invalid(tutti_allreduce(nullptr, out.data(), 16, TUTTI_FLOAT32, TUTTI_SUM, world()), "sendbuf");
  expect_invalid(tutti_allreduce(buf.data(), nullptr, 16, TUTTI_FLOAT32, TUTTI_SUM, world()), "recvbuf");
  expect_invalid(tutti_allreduce(buf.data(), out.data(), 16, static_cast<tutti_datatype_t>(99), TUTTI_SUM, world()), "dt=99");
  expect_invalid(tutti_allreduce(buf.data(), out.data(), 16, TUTTI_FLOAT32, static_cast<tutti_op_t>(-1), world()), "op=-1");
  expect_invalid(tutti_allreduce(buf.data(), out.data(), static_cast<size_t>(-5), TUTTI_FLOAT32, TUTTI_SUM, world()), "too large");
  expect_invalid(tutti_allreduce(buf.data(), buf.data() + 4, 8, TUTTI_FLOAT32, TUTTI_SUM, world()), "overlap");
  expect_invalid(tutti_allreduce(buf.data(), out.data(), 16, TUTTI_FLOAT32, TUTTI_SUM, nullptr), "comm is NULL");
  expect_invalid(tutti_bcast(buf.data(), 16, TUTTI_FLOAT32, p, world()), "root=");
  expect_invalid(tutti_bcast(buf.data(), 16, TUTTI_FLOAT32, -1, world()), "root=-1");
  expect_invalid(tutti_reduce(buf.data(), out.data(), 16, TUTTI_FLOAT32, TUTTI_SUM, p + 3, world()), "root=");
  expect_invalid(tutti_send(buf.data(), 16, TUTTI_FLOAT32, p, 0, world()), "peer=");
  expect_invalid(tutti_send(buf.data(), 16, TUTTI_FLOAT32, 0, -3, world()), "tag=-3");
  expect_invalid(tutti_recv(buf.data(), 16, TUTTI_FLOAT32, -2, 0, world()), "peer=-2");
  expect_invalid(tutti_send(buf.data(), 16, TUTTI_FLOAT32, TUTTI_ANY_SOURCE, 0, world()), "peer=-1");
  expect_invalid(tutti_irecv_from(buf.data(), 16, TUTTI_FLOAT32, TUTTI_ANY_SOURCE, 0, world(), nullptr, nullptr), "req");
  expect_invalid(tutti_iallreduce(buf.data(), out.data(), 16, TUTTI_FLOAT32, TUTTI_SUM, world(), nullptr), "req");
  expect_invalid(tutti_alltoallv(buf.data(), nullptr, nullptr, out.data(), nullptr, nullptr, TUTTI_FLOAT32, world()), "NULL");
  expect_invalid(tutti_comm_force_algorithm(world(), "allreduce", "no_such_algo"), "no_such_algo");
  expect_invalid(tutti_comm_force_algorithm(world(), "allreducer", "ring"), "allreducer");
  if (p > 1 && world_rank() != 0)
    expect_invalid(tutti_reduce(TUTTI_IN_PLACE, out.data(), 16, TUTTI_FLOAT32, TUTTI_SUM, 0, world()), "only valid on the root");
  CHECK(std::string(tutti_strerror(TUTTI_ERR_INVALID_ARGUMENT)) == "invalid argument");
  CHECK(std::string(tutti_strerror(12345)) == "unknown status code");
  // Still usable.
  std::vector<float> sum(16);
  REQUIRE(tutti_allreduce(buf.data(), sum.data(), 16, TUTTI_FLOAT32, TUTTI_SUM, world()) == TUTTI_SUCCESS);
  CHECK(all_ranks(sum[0] == static_cast<float>(p)));
}

TEST_CASE("statistics count calls, fallbacks and cached schedules", "[api]") {
  tutti_comm_stats_t before{}, after{};
  REQUIRE(tutti_comm_stats(world(), &before) == 0);
  std::vector<float> a(1000, 1.0f), b(1000);
  REQUIRE(tutti_comm_force_algorithm(world(), "allreduce", "mpi") == 0);
  REQUIRE(tutti_allreduce(a.data(), b.data(), 1000, TUTTI_FLOAT32, TUTTI_SUM, world()) == 0);
  CHECK(std::string(tutti_comm_last_algorithm(world())) == "mpi");
  REQUIRE(tutti_comm_force_algorithm(world(), "allreduce", "ring") == 0);
  for (int i = 0; i < 3; ++i)
    REQUIRE(tutti_allreduce(a.data(), b.data(), 1000, TUTTI_FLOAT32, TUTTI_SUM, world()) == 0);
  CHECK(std::string(tutti_comm_last_algorithm(world())) == "ring");
  REQUIRE(tutti_comm_force_algorithm(world(), "allreduce", nullptr) == 0);
  REQUIRE(tutti_comm_stats(world(), &after) == 0);
  CHECK(after.collectives - before.collectives == 4);
  CHECK(after.mpi_fallbacks - before.mpi_fallbacks == 1);
  CHECK(after.schedule_cache_hits - before.schedule_cache_hits >= 2);
}

}  // namespace tutti::testing

namespace tutti::testing {

// A rank whose collective has completed goes on to MPI calls and stops
// progressing tutti's UCX worker. Nothing the others still need from it may
// be left queued there (rendezvous control messages were: 1-in-5 hangs of
// 8 MiB tree allreduces on 5 oversubscribed ranks). Large pipelined
// collectives back to back with an MPI barrier between them, on every rank
// count the suite runs; a regression shows as a timeout.
TEST_CASE("large collectives followed by MPI calls never leave a peer waiting", "[api]") {
  const int p = world_size();
  const size_t n = size_t{2} << 20;  // 8 MiB of float32
  std::vector<float> in(n, 1.0f), out(n);
  std::vector<float> block(n / static_cast<size_t>(p), 1.0f);
  bool ok = true;
  for (const char* algo : {"tree", "ring"}) {
    REQUIRE(tutti_comm_force_algorithm(world(), "allreduce", algo) == TUTTI_SUCCESS);
    // all_ranks (an MPI_Allreduce) is the MPI call, and stops every rank
    // at the first failure anywhere.
    for (int i = 0; i < 20 && ok; ++i)
      ok = all_ranks(tutti_allreduce(in.data(), out.data(), n, TUTTI_FLOAT32, TUTTI_SUM,
                                     world()) == TUTTI_SUCCESS &&
                     out[n - 1] == static_cast<float>(p));
  }
  REQUIRE(tutti_comm_force_algorithm(world(), "allreduce", nullptr) == TUTTI_SUCCESS);
  REQUIRE(tutti_comm_force_algorithm(world(), "allgather", "bruck") == TUTTI_SUCCESS);
  for (int i = 0; i < 20 && ok; ++i)
    ok = all_ranks(tutti_allgather(block.data(), out.data(), block.size(), TUTTI_FLOAT32,
                                   world()) == TUTTI_SUCCESS);
  REQUIRE(tutti_comm_force_algorithm(world(), "allgather", nullptr) == TUTTI_SUCCESS);
  INFO(tutti_last_error());
  CHECK(ok);
}

// alltoallv keeps its last schedule with the counts and displacements it
// was built for: a call that repeats them replays it, any other rebuilds.
TEST_CASE("alltoallv replays its schedule only for the same counts and displacements", "[api]") {
  const int p = world_size(), me = world_rank();
  // Across nodes the rules choose the MPI library's alltoallv, which has no
  // schedule: a schedule of tutti's then.
  const bool one_node = all_ranks(ranks_on_this_node() == p);
  if (!one_node) REQUIRE(tutti_comm_force_algorithm(world(), "alltoallv", "pairwise") == TUTTI_SUCCESS);
  // Rank r sends r + q + extra floats to q, each block `gap` floats after
  // the one before;
  // each float says who sent it, to whom and where in the block it stood.
  auto exchange = [&](size_t extra, size_t gap) {
    std::vector<size_t> send_counts(p), send_displs(p), recv_counts(p), recv_displs(p);
    size_t sent = 0, received = 0;
    for (int q = 0; q < p; ++q) {
      send_counts[q] = static_cast<size_t>(me + q) + extra;
      send_displs[q] = sent + gap;
      sent += gap + send_counts[q];
      recv_counts[q] = static_cast<size_t>(q + me) + extra;
      recv_displs[q] = received + gap;
      received += gap + recv_counts[q];
    }
    std::vector<float> in(sent, -1.0f), out(received, -1.0f);
    for (int q = 0; q < p; ++q)
      for (size_t i = 0; i < send_counts[q]; ++i)
        in[send_displs[q] + i] = static_cast<float>(me * 10000 + q * 100 + static_cast<int>(i));
    tutti_comm_stats_t before{}, after{};
    REQUIRE(tutti_comm_stats(world(), &before) == 0);
    REQUIRE(tutti_alltoallv(in.data(), send_counts.data(), send_displs.data(), out.data(),
                            recv_counts.data(), recv_displs.data(), TUTTI_FLOAT32, world()) == 0);
    REQUIRE(tutti_comm_stats(world(), &after) == 0);
    bool right = true;
    for (int q = 0; q < p; ++q)
      for (size_t i = 0; i < recv_counts[q]; ++i)
        right = right && out[recv_displs[q] + i] ==
                             static_cast<float>(q * 10000 + me * 100 + static_cast<int>(i));
    CHECK(all_ranks(right));
    return after.schedule_builds - before.schedule_builds;
  };
  CHECK(exchange(1, 0) == 1);
  CHECK(exchange(1, 0) == 0);  // the same layout: replayed
  CHECK(exchange(1, 0) == 0);
  CHECK(exchange(2, 0) == 1);  // other counts
  CHECK(exchange(2, 3) == 1);  // other displacements
  CHECK(exchange(1, 0) == 1);  // only the last layout is kept
  REQUIRE(tutti_comm_force_algorithm(world(), "alltoallv", nullptr) == TUTTI_SUCCESS);
}

// alltoallv "shm" sends each block one of four ways by its size (lines,
// a slot, a read in place, or nothing), and only the two ranks of a pair
// know its size: calls where some pairs stage blocks and others do not,
// between allgathers through the same slots, must all stay right (the
// slots' parities need every rank's first flag round, empty signals too).
TEST_CASE("alltoallv mixes empty, line, slot and read blocks between calls through the slots",
          "[api]") {
  const int p = world_size(), me = world_rank();
  const bool one_node = all_ranks(ranks_on_this_node() == p);
  REQUIRE(tutti_comm_force_algorithm(world(), "alltoallv", "shm") == TUTTI_SUCCESS);
  // Floats from `from` to `to` in call `call`: empty, 200 B (lines), 2.5
  // KiB and 24 KiB (slots), 200 KiB (read in place), 2.8 MB (on 2 ranks
  // through the slots in chunks, else read), odd counts.
  auto count = [](int call, int from, int to) -> size_t {
    constexpr size_t kCounts[] = {0, 51, 627, 6007, 50021, 700001};
    return kCounts[mix(static_cast<uint64_t>(call) * 7919u + static_cast<uint64_t>(from) * 131u +
                       static_cast<uint64_t>(to)) % 6];
  };
  auto value = [](int call, int from, int to, size_t i) {
    return static_cast<float>((call * 64 + from * 8 + to) % 4096) +
           static_cast<float>(i % 1000) * 4096.0f;
  };
  bool right = true, ran_shm = true;
  const size_t gathered = 2053;  // floats per rank: 8 KiB, through the slots
  std::vector<float> mine(gathered), all(gathered * static_cast<size_t>(p));
  for (int call = 0; call < 40; ++call) {
    std::vector<size_t> sc(p), sd(p), rc(p), rd(p);
    size_t sent = 0, received = 0;
    for (int q = 0; q < p; ++q) {
      sc[q] = count(call, me, q);
      sd[q] = sent;
      sent += sc[q] + 3;
      rc[q] = count(call, q, me);
      rd[q] = received;
      received += rc[q] + 5;
    }
    std::vector<float> in(sent, -1.0f), out(received, -2.0f);
    for (int q = 0; q < p; ++q)
      for (size_t i = 0; i < sc[q]; ++i) in[sd[q] + i] = value(call, me, q, i);
    if (call % 3 == 2) {  // through the engine, not a direct run
      tutti_request_t req = nullptr;
      REQUIRE(tutti_ialltoallv(in.data(), sc.data(), sd.data(), out.data(), rc.data(), rd.data(),
                               TUTTI_FLOAT32, world(), &req) == TUTTI_SUCCESS);
      REQUIRE(tutti_wait(&req) == TUTTI_SUCCESS);
    } else {
      REQUIRE(tutti_alltoallv(in.data(), sc.data(), sd.data(), out.data(), rc.data(), rd.data(),
                              TUTTI_FLOAT32, world()) == TUTTI_SUCCESS);
    }
    ran_shm = ran_shm && std::string(tutti_comm_last_algorithm(world())) == "shm";
    for (int q = 0; q < p; ++q) {
      for (size_t i = 0; i < rc[q]; ++i) right = right && out[rd[q] + i] == value(call, q, me, i);
      for (size_t i = rc[q]; i < rc[q] + 5; ++i) right = right && out[rd[q] + i] == -2.0f;
    }
    for (size_t i = 0; i < gathered; ++i)
      mine[i] = static_cast<float>(me * 100000 + call * 10 + static_cast<int>(i % 7));
    REQUIRE(tutti_allgather(mine.data(), all.data(), gathered, TUTTI_FLOAT32, world()) ==
            TUTTI_SUCCESS);
    for (int q = 0; q < p; ++q)
      for (size_t i = 0; i < gathered; ++i)
        right = right && all[static_cast<size_t>(q) * gathered + i] ==
                             static_cast<float>(q * 100000 + call * 10 + static_cast<int>(i % 7));
  }
  REQUIRE(tutti_comm_force_algorithm(world(), "alltoallv", nullptr) == TUTTI_SUCCESS);
  CHECK(all_ranks(right));
  // Across nodes "shm" refuses and the call falls back (tested elsewhere),
  // as does a single rank (a copy, no segment).
  if (one_node && p > 1) CHECK(all_ranks(ran_shm));
}

}  // namespace tutti::testing
