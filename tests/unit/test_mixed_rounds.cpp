// The engine's mixed rounds (engine/schedule.hpp): messages and shared-memory
// flags of one round at once, as node-aware algorithms use them to overlap
// their phases. Two ranks of one simulated node: rank 0 sends to rank 1 and
// signals it in one round.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <vector>

#include "engine/engine.hpp"
#include "node/shared_segment.hpp"
#include "transport/sim.hpp"

namespace tutti::testing {
namespace {

struct TwoRanks {
  Topology topo;
  std::vector<char> memory;
  std::unique_ptr<SharedSegment> segment;
  std::vector<SharedPort> ports;
  TwoRanks() {
    topo.nranks = 2;
    topo.nnodes = 1;
    topo.max_ranks_per_node = 2;
    topo.node_of_rank = {0, 0};
    topo.shared_bytes = 1 << 12;
    topo.index_nodes();
    memory.assign(SharedSegment::flag_bytes(2) + topo.shared_bytes, 0);
    segment = std::make_unique<SharedSegment>(memory.data(), memory.size(), 2);
    ports.emplace_back(segment.get(), 0);
    ports.emplace_back(segment.get(), 1);
  }
};

CollArgs bcast_args() {
  CollArgs args;
  args.coll = Collective::Bcast;
  args.count = 32;
  args.dtype = Datatype::Uint8;
  return args;
}

// Rank 0: one mixed round (send 16 bytes, copy the other 16 into the
// segment, signal). Rank 1: receive and wait in one mixed round, then copy
// the segment's 16 bytes out.
std::shared_ptr<const Schedule> schedule_of(int rank, const TwoRanks& job) {
  const CollArgs args = bcast_args();  // the builder keeps a reference
  ScheduleBuilder b(args, rank, job.topo);
  b.begin_mixed_round();
  if (rank == 0) {
    b.copy(shared(0), output(16), 16);
    b.send(1, output(), 16);
    b.shm_signal(1);
  } else {
    b.recv(0, output(), 16);
    b.shm_wait(0);
  }
  b.end_round();
  if (rank == 1) b.copy(output(16), shared(0), 16);
  return std::make_shared<const Schedule>(b.finish());
}

TEST_CASE("a mixed round completes its messages and its flags", "[schedule]") {
  for (SimNetwork::Mode mode : {SimNetwork::Mode::Eager, SimNetwork::Mode::Rendezvous}) {
    TwoRanks job;
    SimNetwork net(2, mode);
    SimTransport t0(net, 0), t1(net, 1);
    std::vector<char> out0(32), out1(32, 0);
    for (int i = 0; i < 32; ++i) out0[static_cast<size_t>(i)] = static_cast<char>(i + 1);
    Buffers b0, b1;
    b0.output = out0.data();
    b1.output = out1.data();
    b0.shared = &job.ports[0];
    b1.shared = &job.ports[1];
    ScheduleRun r0(t0, schedule_of(0, job), b0, 1), r1(t1, schedule_of(1, job), b1, 1);
    REQUIRE(r0.waiting_for() == std::vector<int>{});  // not started
    for (int polls = 0; polls < 100 && !(r0.finished() && r1.finished()); ++polls) {
      r0.advance();
      r1.advance();
      t0.progress();
      t1.progress();
    }
    REQUIRE(r0.finished());
    REQUIRE(r1.finished());
    CHECK(r0.status() == TUTTI_SUCCESS);
    CHECK(r1.status() == TUTTI_SUCCESS);
    CHECK(std::memcmp(out0.data(), out1.data(), 32) == 0);
    CHECK(net.in_flight() == 0);
  }
}

TEST_CASE("a mixed round waits for both kinds and is cancelled without its flags", "[schedule]") {
  TwoRanks job;
  SimNetwork net(2, SimNetwork::Mode::Rendezvous);
  SimTransport t1(net, 1);
  std::vector<char> out1(32, 0);
  Buffers b1;
  b1.output = out1.data();
  b1.shared = &job.ports[1];
  // Rank 0 never runs: rank 1 waits for its message and its signal.
  ScheduleRun r1(t1, schedule_of(1, job), b1, 1);
  for (int polls = 0; polls < 10; ++polls) {
    CHECK_FALSE(r1.advance());
    t1.progress();
  }
  CHECK(r1.waiting_for() == std::vector<int>{0});
  CHECK(r1.round() == 0);
  r1.cancel(TUTTI_ERR_TIMEOUT, "rank 0 never came");
  for (int polls = 0; polls < 10 && !r1.finished(); ++polls) {
    r1.advance();
    t1.progress();
  }
  REQUIRE(r1.finished());
  CHECK(r1.status() == TUTTI_ERR_TIMEOUT);
  CHECK(r1.error() == "rank 0 never came");
}

}  // namespace
}  // namespace tutti::testing
