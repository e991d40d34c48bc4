// Every collective on CUDA device buffers, checked on every rank against
// the host reference: every datatype x op at counts 0, 1, 7 and 1031, in
// place and not, blocking and non-blocking; every registered algorithm
// forced one by one (the MPI fallback, which stages through host memory,
// included); host and device buffers mixed in one call; device pointers off
// their alignment (vector, scalar and byte-wise kernel paths); 64 MiB
// messages, and large messages through the algorithms that send them with
// buffers allocated anew every call (CUDA IPC's case); point-to-point
// messages; buffers of another device refused.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "algos/registry.hpp"
#include "base/status.hpp"
#include "cuda_harness.hpp"
#include "reference.hpp"
#include "user_call.hpp"

namespace tutti::testing {
namespace {

struct Sweep {
  std::vector<std::string> failures;
  size_t cases = 0;
  // Where set, the algorithm forced for these calls: each call must have
  // run it, or, where `refusal_expected`, must have been refused by it (and
  // counted so) and run by another.
  std::string forced;
  bool refusal_expected = false;
  void run(const CollArgs& args, uint64_t seed, Placement where, bool nonblocking) {
    ++cases;
    const ForcedRunCheck forced_run(world(), forced, refusal_expected);
    std::string error = check_on_device(args, seed, where, nonblocking);
    if (error.empty() && !forced.empty()) error = forced_run.after(args);
    if (!error.empty() && failures.size() < 20) failures.push_back(std::move(error));
  }
  void report() {
    INFO(cases << " cases");
    for (const auto& f : failures) UNSCOPED_INFO(f);
    CHECK(failures.empty());
  }
};

CollArgs make(Collective coll, size_t count, Datatype dt, Op op, bool in_place, int root) {
  CollArgs a;
  a.coll = coll;
  a.count = count;
  a.dtype = dt;
  a.op = op;
  a.in_place = in_place;
  a.root = root;
  return a;
}

bool can_in_place(Collective c) { return c != Collective::Bcast && c != Collective::Barrier; }

TEST_CASE("every collective x datatype x op on device buffers", "[collectives]") {
  const int p = world_size();
  Sweep sweep;
  uint64_t seed = 1;
  int variant = 0;
  for (Collective coll : kAllCollectives) {
    if (coll == Collective::Barrier) continue;
    std::vector<int> roots = {0};
    if (has_root(coll) && p > 1) roots.push_back(p - 1);
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1031}})
      for (Datatype dt : kAllDatatypes)
        for (Op op : kAllOps) {
          if (!is_reduction(coll) && op != Op::Sum) continue;
          for (bool in_place : {false, true}) {
            if (in_place && !can_in_place(coll)) continue;
            for (int root : roots)
              sweep.run(make(coll, count, dt, op, in_place, root), ++seed, {}, ++variant % 3 == 0);
          }
        }
  }
  sweep.report();
}

TEST_CASE("every algorithm on device buffers", "[collectives]") {
  Sweep sweep;
  uint64_t seed = 100;
  for (Collective coll : kAllCollectives) {
    const std::string name(collective_name(coll));
    for (const algos::Algorithm* algo : algos::algorithms_for(coll)) {
      REQUIRE(tutti_comm_force_algorithm(world(), name.c_str(), std::string(algo->name).c_str()) ==
              TUTTI_SUCCESS);
      sweep.forced = algo->name;
      // The shared-memory algorithms run on host copies of device buffers
      // (Comm::launch); they refuse only on one rank, which has no shared
      // segment.
      sweep.refusal_expected = (algo->name == "shm" || algo->name == "lines" || algo->name == "cma") &&
                               world_size() == 1;
      if (coll == Collective::Barrier) {
        sweep.run(make(coll, 0, Datatype::Uint8, Op::Sum, false, 0), ++seed, {}, false);
        continue;
      }
      const Op op = is_reduction(coll) ? Op::Avg : Op::Sum;
      for (bool in_place : {false, true}) {
        if (in_place && !can_in_place(coll)) continue;
        sweep.run(make(coll, 1031, Datatype::Float32, op, in_place, 0), ++seed, {}, false);
        sweep.run(make(coll, 1031, Datatype::Float16, Op::Sum, in_place, world_size() - 1),
                  ++seed, {}, true);
        sweep.run(make(coll, 65537, Datatype::Int8, is_reduction(coll) ? Op::Max : Op::Sum,
                       in_place, 0),
                  ++seed, {}, false);
      }
    }
    REQUIRE(tutti_comm_force_algorithm(world(), name.c_str(), nullptr) == TUTTI_SUCCESS);
  }
  sweep.forced.clear();
  sweep.report();
}

TEST_CASE("host and device buffers mixed in one call", "[collectives]") {
  Sweep sweep;
  uint64_t seed = 200;
  for (Collective coll : kAllCollectives) {
    if (coll == Collective::Barrier || coll == Collective::Bcast) continue;  // one buffer only
    for (bool device_send : {false, true}) {
      const Placement where{device_send, !device_send, 0};
      sweep.run(make(coll, 1031, Datatype::Float32, Op::Sum, false, 0), ++seed, where, false);
      sweep.run(make(coll, 7, Datatype::Bfloat16, is_reduction(coll) ? Op::Avg : Op::Sum, false, 0),
                ++seed, where, true);
    }
  }
  sweep.report();
}

TEST_CASE("device pointers off their alignment", "[collectives]") {
  Sweep sweep;
  uint64_t seed = 300;
  for (Collective coll : {Collective::Allreduce, Collective::ReduceScatter, Collective::Reduce,
                          Collective::Allgather, Collective::Bcast, Collective::Alltoall})
    for (size_t offset : {size_t{1}, size_t{2}, size_t{4}, size_t{8}, size_t{12}})
      for (Datatype dt : {Datatype::Float32, Datatype::Int8, Datatype::Float16, Datatype::Float64}) {
        const Op op = Op::Sum;
        sweep.run(make(coll, 1031, dt, op, false, 0), ++seed, {true, true, offset}, false);
        if (can_in_place(coll))
          sweep.run(make(coll, 257, dt, op, true, 0), ++seed, {true, true, offset}, true);
      }
  sweep.report();
}

TEST_CASE("64 MiB messages on device buffers", "[collectives][large]") {
  Sweep sweep;
  const size_t floats = size_t{16} << 20;  // 64 MiB of float32
  const int p = world_size();
  sweep.run(make(Collective::Allreduce, floats, Datatype::Float32, Op::Sum, false, 0), 400, {}, false);
  sweep.run(make(Collective::Allreduce, floats, Datatype::Float32, Op::Avg, true, 0), 401, {}, true);
  sweep.run(make(Collective::Bcast, floats, Datatype::Float32, Op::Sum, false, p - 1), 402, {}, false);
  sweep.run(make(Collective::ReduceScatter, floats / static_cast<size_t>(p), Datatype::Float32,
                 Op::Sum, false, 0),
            403, {}, false);
  sweep.run(make(Collective::Allgather, floats / static_cast<size_t>(p), Datatype::Float32,
                 Op::Sum, false, 0),
            404, {}, false);
  sweep.report();
}

// Large messages between the ranks of one node through algorithms that send
// them (on one node the dispatcher takes the shared segment, which sends
// none), so that with TUTTI_CUDA_IPC=1 they go as offers. Every call
// allocates its buffers anew (check_on_device) and the calls repeat, so a
// sender's new buffers may land at addresses its peer still maps (CUDA then
// refuses to open them until the old mapping is closed: docs/CUDA.md).
TEST_CASE("large device messages through algorithms that send them, buffers allocated anew",
          "[collectives][large]") {
  Sweep sweep;
  uint64_t seed = 500;
  const size_t p = static_cast<size_t>(world_size());
  struct Forced {
    Collective coll;
    const char* algorithm;
  };
  const Forced forced[] = {{Collective::Allreduce, "ring"},     {Collective::Allgather, "ring"},
                           {Collective::ReduceScatter, "ring"}, {Collective::Bcast, "ring"},
                           {Collective::Alltoall, "pairwise"},  {Collective::Reduce, "tree"}};
  for (const Forced& f : forced) {
    const std::string name(collective_name(f.coll));
    REQUIRE(tutti_comm_force_algorithm(world(), name.c_str(), f.algorithm) == TUTTI_SUCCESS);
    sweep.forced = f.algorithm;
    const bool per_block = f.coll == Collective::Allgather ||
                           f.coll == Collective::ReduceScatter || f.coll == Collective::Alltoall;
    for (int repeat = 0; repeat < 3; ++repeat)
      for (size_t floats : {size_t{1} << 18, (size_t{1} << 22) + 3}) {  // 1 MiB, 16 MiB + 12 B
        const size_t count = per_block ? floats / p : floats;
        sweep.run(make(f.coll, count, Datatype::Float32, Op::Sum, false, world_size() - 1), ++seed,
                  {}, repeat == 1);
      }
    REQUIRE(tutti_comm_force_algorithm(world(), name.c_str(), nullptr) == TUTTI_SUCCESS);
  }
  sweep.forced.clear();
  sweep.report();
}

// Around a ring; the receive names its peer, or takes any source and must
// learn that the message came from the previous rank.
TEST_CASE("point-to-point on device buffers", "[p2p]") {
  const int p = world_size(), me = world_rank();
  const int next = (me + 1) % p, prev = (me + p - 1) % p;
  for (bool any_source : {false, true})
  for (size_t n : {size_t{0}, size_t{1}, size_t{4097}, size_t{1} << 22}) {
    INFO((any_source ? "any source, " : "named peer, ") << n << " floats");
    std::vector<float> out(n), in(n, -1.0f);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(me * 1000 + static_cast<int>(i % 997));
    float *dout = nullptr, *din = nullptr;
    CUDA_REQUIRE(cudaMalloc(&dout, n * sizeof(float) + 4));
    CUDA_REQUIRE(cudaMalloc(&din, n * sizeof(float) + 4));
    CUDA_REQUIRE(cudaMemcpy(dout, out.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaDeviceSynchronize());  // a pageable upload may still be in flight
    tutti_request_t rr = nullptr, sr = nullptr;
    int from = -7;
    int st = tutti_irecv_from(din, n, TUTTI_FLOAT32, any_source ? TUTTI_ANY_SOURCE : prev, 5,
                              world(), &from, &rr);
    if (st == TUTTI_SUCCESS) st = tutti_isend(dout, n, TUTTI_FLOAT32, next, 5, world(), &sr);
    if (st == TUTTI_SUCCESS) st = tutti_wait(&rr);
    if (st == TUTTI_SUCCESS) st = tutti_wait(&sr);
    INFO(tutti_last_error());
    CHECK(all_ranks(st == TUTTI_SUCCESS && from == prev));
    CUDA_REQUIRE(cudaMemcpy(in.data(), din, n * sizeof(float), cudaMemcpyDeviceToHost));
    bool ok = true;
    for (size_t i = 0; i < n; ++i)
      ok = ok && in[i] == static_cast<float>(prev * 1000 + static_cast<int>(i % 997));
    CHECK(all_ranks(ok));
    cudaFree(dout);
    cudaFree(din);
  }
}

// tutti's kernels and stream belong to the current device: a buffer of
// another one is refused before anything runs (every rank here passes one,
// so no rank waits for another). Needs two GPUs; on one there is no other
// device to pass.
TEST_CASE("a device buffer of another device than the current one is refused", "[collectives]") {
  int devices = 0, current = 0;
  CUDA_REQUIRE(cudaGetDeviceCount(&devices));
  CUDA_REQUIRE(cudaGetDevice(&current));
  if (!all_ranks(devices >= 2)) {
    SUCCEED("fewer than two GPUs: no other device to pass");
    return;
  }
  const int other = (current + 1) % devices;
  float* p = nullptr;
  CUDA_REQUIRE(cudaSetDevice(other));
  CUDA_REQUIRE(cudaMalloc(&p, 1024 * sizeof(float)));
  CUDA_REQUIRE(cudaSetDevice(current));
  const std::string named = "on CUDA device " + std::to_string(other);
  int st = tutti_allreduce(TUTTI_IN_PLACE, p, 1024, TUTTI_FLOAT32, TUTTI_SUM, world());
  CHECK(st == TUTTI_ERR_INVALID_ARGUMENT);
  CHECK(std::string(tutti_last_error()).find(named) != std::string::npos);
  st = tutti_bcast(p, 1024, TUTTI_FLOAT32, 0, world());
  CHECK(st == TUTTI_ERR_INVALID_ARGUMENT);
  st = tutti_send(p, 1024, TUTTI_FLOAT32, (world_rank() + 1) % world_size(), 9, world());
  CHECK(st == TUTTI_ERR_INVALID_ARGUMENT);
  CHECK(std::string(tutti_last_error()).find(named) != std::string::npos);
  // The communicator is still usable.
  CHECK(all_ranks(tutti_barrier(world()) == TUTTI_SUCCESS));
  CUDA_REQUIRE(cudaSetDevice(other));
  cudaFree(p);
  CUDA_REQUIRE(cudaSetDevice(current));
}

}  // namespace
}  // namespace tutti::testing
