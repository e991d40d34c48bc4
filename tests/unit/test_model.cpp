// The cost model (model/predict.hpp): every algorithm's schedules run to
// the end in virtual time at 1-9 ranks and across nodes; the predictions
// agree with the textbook costs where those are exact (ring allreduce,
// recursive doubling, binomial bcast); contention on a node's NICs counts;
// machine descriptions are parsed, and refused with the line and key.
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <string>

#include "algos/registry.hpp"
#include "base/status.hpp"
#include "model/fit.hpp"
#include "model/predict.hpp"
#include "tuning/dispatch.hpp"

namespace tutti::testing {
namespace {

// Messages between nodes only (one rank per node), no compute cost unless
// asked: the textbook alpha-beta setting.
model::Machine network_only(double alpha_us, double gbps) {
  model::Machine m;
  m.inter = {alpha_us, gbps * 1e3};
  m.intra = {alpha_us, gbps * 1e3};
  m.reduce_bytes_per_us = 1e12;
  m.copy_bytes_per_us = 1e12;
  m.eager_bytes = 0;
  m.call_us = 0;
  return m;
}

// No latencies: every message's bytes and every local copy at 1 GB/s (the
// time a schedule's CPU work and bytes take, nothing else).
model::Machine bytes_at_1gbps() {
  model::Machine m = network_only(0.0, 1.0);
  m.intra = {0.0, 1e3};
  m.copy_bytes_per_us = 1e3;
  return m;
}

double predict_us(Collective coll, std::string_view algo, size_t bytes, int p, int per_node,
                  const model::Machine& m) {
  const algos::Algorithm* a = algos::find_algorithm(coll, algo);
  REQUIRE(a);
  CollArgs args{.coll = coll, .dtype = Datatype::Float32, .op = Op::Sum};
  args.count = count_for_message_bytes(coll, bytes, args.dtype, p);
  const model::Prediction pr = model::predict(*a, args, model::model_topology(p, per_node), m);
  INFO(algo << " p=" << p << " bytes=" << bytes << ": " << pr.error);
  REQUIRE(pr.error.empty());
  return pr.us;
}

}  // namespace

TEST_CASE("model: every algorithm's schedules finish in virtual time", "[model]") {
  const model::Machine m;
  for (int p = 1; p <= 9; ++p) {
    for (int per_node : {p, 2, 1}) {
      const Topology topo = model::model_topology(p, per_node);
      for (const algos::Algorithm& a : algos::all_algorithms()) {
        if (a.is_mpi() || a.coll == Collective::Alltoallv) continue;
        for (size_t bytes : {size_t{8}, size_t{65536} + 4 * 7}) {
          CollArgs args{.coll = a.coll, .dtype = Datatype::Float32, .op = Op::Sum,
                        .root = p - 1};
          args.count = count_for_message_bytes(a.coll, bytes, args.dtype, p);
          if (a.refuse(args, topo)) continue;
          const model::Prediction pr = model::predict_every_rank(a, args, topo, m);
          INFO(collective_name(a.coll) << " " << a.name << " p=" << p << " per node " << per_node
                                       << " bytes=" << bytes << ": " << pr.error);
          CHECK(pr.error.empty());
          CHECK(std::isfinite(pr.us));
          CHECK(pr.us >= 0);
          if (p > 1 && args.count > 0) CHECK(pr.us > 0);
        }
      }
    }
  }
}

TEST_CASE("model: ring allreduce costs 2(p-1)(alpha + n/(p beta)), flat in p for large n", "[model]") {
  const double alpha = 2.0, gbps = 10.0;
  const model::Machine m = network_only(alpha, gbps);
  const size_t n = size_t{64} << 20;
  double last = 0;
  for (int p : {4, 8, 16, 64}) {
    const double want = 2.0 * (p - 1) * (alpha + static_cast<double>(n) / p / (gbps * 1e3));
    const double got = predict_us(Collective::Allreduce, "ring", n, p, 1, m);
    INFO("p=" << p << " predicted " << got << " us, textbook " << want << " us");
    // Chunked messages pay alpha per chunk: at most a few percent here.
    CHECK(got >= want * 0.99);
    CHECK(got <= want * 1.10);
    // Flat in p once (p-1)/p is near 1 (the literature's check, from 16 ranks).
    if (p > 16) CHECK(std::abs(got / last - 1) < 0.10);
    last = got;
  }
}

TEST_CASE("model: recursive doubling at 8 B costs log2(p) alpha; binomial bcast log2(p) messages", "[model]") {
  const double alpha = 5.0;
  const model::Machine m = network_only(alpha, 10.0);
  for (int p : {2, 8, 64, 256}) {
    const double steps = std::log2(p);
    const double rd = predict_us(Collective::Allreduce, "recursive_doubling", 8, p, 1, m);
    INFO("p=" << p << " recursive doubling " << rd);
    CHECK(rd == Approx(steps * alpha).epsilon(0.02));
    const double tree = predict_us(Collective::Bcast, "tree", 8, p, 1, m);
    INFO("binomial bcast " << tree);
    CHECK(tree == Approx(steps * alpha).epsilon(0.02));
  }
}

// The costs MPICH's algorithms are known by (R. Thakur, R. Rabenseifner,
// W. Gropp, "Optimization of Collective Communication Operations in
// MPICH", IJHPCA 19(1), 2005, section 4; reductions free here, so no gamma
// term): n is the whole vector (allgather: what every rank ends with),
// one rank per node, p a power of two. The model runs the schedules, and
// must land on the formulas (chunked messages pay a few more alphas).
TEST_CASE("model: MPICH's algorithms cost what Thakur, Rabenseifner and Gropp give", "[model]") {
  const double alpha = 2.0, gbps = 10.0, beta = 1 / (gbps * 1e3);  // us per byte
  const model::Machine m = network_only(alpha, gbps);
  const size_t n = size_t{64} << 20;
  for (int p : {4, 16, 64}) {
    const double lg = std::log2(p), share = static_cast<double>(p - 1) / p * n * beta;
    struct Formula {
      Collective coll;
      const char* algo;
      double us;
    };
    for (const Formula& f : {
             // Rabenseifner: reduce-scatter by recursive halving, allgather by doubling.
             Formula{Collective::Allreduce, "recursive_halving", 2 * lg * alpha + 2 * share},
             Formula{Collective::Allgather, "recursive_doubling", lg * alpha + share},
             Formula{Collective::Allgather, "ring", (p - 1) * alpha + share},
             Formula{Collective::ReduceScatter, "recursive_halving", lg * alpha + share},
             // van de Geijn: binomial scatter, then ring allgather.
             Formula{Collective::Bcast, "scatter_allgather", (lg + p - 1) * alpha + 2 * share},
             // Pairwise exchange: p - 1 steps of one block each way.
             Formula{Collective::Alltoall, "pairwise", (p - 1) * alpha + share},
         }) {
      const double got = predict_us(f.coll, f.algo, n, p, 1, m);
      INFO(collective_name(f.coll) << " " << f.algo << " p=" << p << ": predicted " << got
                                   << " us, formula " << f.us << " us");
      CHECK(got >= f.us * 0.99);
      CHECK(got <= f.us * 1.10);
    }
  }
}

TEST_CASE("model: messages through one NIC queue; a second NIC halves the wait", "[model]") {
  model::Machine m = network_only(1.0, 1.0);
  m.intra = {0.1, 1e6};  // inside a node: nearly free
  // 2 nodes of 4 ranks: in alltoall every rank sends 4 blocks to the other node.
  const size_t bytes = size_t{4} << 20;
  m.nics_per_node = 1;
  const double one = predict_us(Collective::Alltoall, "pairwise", bytes, 8, 4, m);
  m.nics_per_node = 2;
  const double two = predict_us(Collective::Alltoall, "pairwise", bytes, 8, 4, m);
  INFO("1 NIC " << one << " us, 2 NICs " << two << " us");
  // Half of each rank's blocks stay on its node, and those do not queue.
  CHECK(two < 0.7 * one);
  CHECK(two > 0.4 * one);
}

// Between nodes the switch buffers: a message that waits for a busy
// receiving NIC does not hold its sender's NIC. Held together (the model
// until 2026-11-27), a linear alltoall of 512 KiB on 64 nodes of 8 ranks
// was predicted at 194 ms and the flat binary-tree reduce of 8 KiB grew
// 28x from 512 to 16,384 ranks, as later messages queued behind waiting
// ones.
TEST_CASE("model: the switch buffers; a waiting message does not hold its sender's NIC", "[model]") {
  // No per-message gap: the 511 x 8 messages each NIC carries would
  // otherwise dominate, and this is about the bytes.
  model::Machine m;
  m.inter.inject_us = 0;
  // Every rank sends 7/8 of 512 KiB off its node; each NIC carries 8 ranks'
  // share out and in: the time of those bytes through one NIC, plus the
  // latencies of the 511 messages of each rank, not the sum of the waits.
  const int p = 512, per_node = 8;
  const size_t bytes = size_t{512} << 10;
  const double nic_bytes = 8.0 * bytes * (p - per_node) / p;
  const double nic_us = nic_bytes / m.inter.rate(false);
  const double alltoall = predict_us(Collective::Alltoall, "linear", bytes, p, per_node, m);
  INFO("linear alltoall " << alltoall << " us, one NIC's bytes " << nic_us << " us");
  CHECK(alltoall >= nic_us);
  CHECK(alltoall < 3 * nic_us);
  // The flat binary tree's depth grows from 9 to 14 levels.
  const double small = predict_us(Collective::Reduce, "binary_tree", 8192, 512, per_node, m);
  const double large = predict_us(Collective::Reduce, "binary_tree", 8192, 16384, per_node, m);
  INFO("binary_tree reduce of 8 KiB: " << small << " us at 512 ranks, " << large << " at 16,384");
  CHECK(large < 3 * small);
}

TEST_CASE("model: a NIC's message rate delays bursts, not lone messages", "[model]") {
  model::Machine m = network_only(10.0, 1.0);
  const double g = 4.0;  // below alpha: one message per round never waits for it
  auto both = [&](std::string_view algo) {
    m.inter.inject_us = 0;
    const double without = predict_us(Collective::Allreduce, algo, 8, 64, 1, m);
    m.inter.inject_us = g;
    const double with = predict_us(Collective::Allreduce, algo, 8, 64, 1, m);
    INFO(algo << ": " << without << " us, " << with << " us with inject_us " << g);
    return with - without;
  };
  // Recursive doubling: one message per rank and round.
  CHECK(both("recursive_doubling") == Approx(0).margin(1e-9));
  // Radix 4 on 64 ranks, one per node: 3 rounds in which every NIC sends
  // 3 messages and receives 3, so each round takes at least 2g longer (a
  // sender's third message), and here at most 2 (k-1) g (its sender's port
  // and its receiver's port each serve the other two first).
  const double delay = both("recursive_multiplying");
  CHECK(delay >= 3 * 2 * g - 1e-9);
  CHECK(delay <= 3 * 2 * 3 * g + 1e-9);
}

// The node-aware allgathers and reduce_scatters whose round between nodes
// is an exchange of every node with every other, all posted at once, and
// the overlapped allreduce, whose rounds hold several chunks' exchange
// steps, each with another node: their messages queue for NICs as an
// alltoall's do.
static bool exchanges_with_every_node(const algos::Algorithm& a) {
  if (a.coll == Collective::Allreduce) return a.name == "hierarchical_shm_overlap";
  if (a.coll == Collective::Allgather)
    return a.name == "leader" || a.name == "leader_shm" || a.name == "hierarchical_shm";
  return a.coll == Collective::ReduceScatter && (a.name == "leader" || a.name == "leader_shm");
}

// Representative ranks (model/representative.hpp) against the exact run, where
// both apply: the symmetric schedules of every collective, one rank per
// node and several, small and large messages.
TEST_CASE("model: one node's ranks standing for all agree with the exact run", "[model]") {
  const model::Machine m;
  int symmetric = 0, by_xor = 0, node_exchanges = 0;
  for (const algos::Algorithm& a : algos::all_algorithms()) {
    if (a.is_mpi() || a.coll == Collective::Alltoallv) continue;
    for (int p : {16, 64}) {
      for (int per_node : {1, 4, 8}) {
        const Topology topo = model::model_topology(p, per_node);
        for (size_t bytes : {size_t{64}, size_t{256} << 10, size_t{4} << 20}) {
          CollArgs args{.coll = a.coll, .dtype = Datatype::Float32, .op = Op::Sum};
          args.count = count_for_message_bytes(a.coll, bytes, args.dtype, p);
          if (a.refuse(args, topo)) continue;
          const model::Prediction rep = model::predict_representative(a, args, topo, m);
          if (!rep.error.empty()) continue;  // not symmetric: the exact run only
          ++symmetric;
          if (exchanges_with_every_node(a)) ++node_exchanges;
          // Symmetric under rank xor (node multiple), not under moving.
          if ((a.coll == Collective::Allgather && a.name == "recursive_doubling") ||
              (a.coll == Collective::ReduceScatter && a.name == "recursive_halving"))
            ++by_xor;
          const model::Prediction exact = model::predict_every_rank(a, args, topo, m);
          // What the dispatcher and tutti-sim get: the representative run.
          CHECK(model::predict(a, args, topo, m).us == rep.us);
          INFO(collective_name(a.coll) << " " << a.name << " p=" << p << " per node " << per_node
                                       << " bytes=" << bytes << ": representative " << rep.us
                                       << " us, exact " << exact.us << " us");
          REQUIRE(exact.error.empty());
          CHECK_FALSE(exact.representative);
          CHECK(rep.messages == exact.messages);
          if (a.coll != Collective::Alltoall && !exchanges_with_every_node(a)) {
            // The same run, on fewer ranks.
            CHECK(rep.us == Approx(exact.us).epsilon(1e-9));
            continue;
          }
          // Where messages queue for NICs, the exact run serves equal times
          // in rank order and leaves NICs idle behind busy ones (see
          // model/representative.hpp); the representative run keeps every
          // node in step: never slower, and the exact run at most about
          // twice as slow (up to 17x while a message waiting for its
          // receiver's NIC held its sender's).
          CHECK(rep.us <= exact.us * (1 + 1e-9));
          CHECK(exact.us <= 2.5 * rep.us);
          if (a.coll != Collective::Alltoall) continue;
          // Never below what the NICs can carry (each node sends L (p - L)
          // blocks to other nodes).
          const double block = static_cast<double>(args.count * 4);
          const double carried = per_node * (p - per_node) * block / m.inter.bytes_per_us;
          CHECK(rep.us >= carried * 0.999);
        }
      }
    }
  }
  // The ring and pairwise schedules of allreduce, allgather,
  // reduce_scatter and alltoall at least (4 algorithms x 2 p x 3 layouts x
  // 3 sizes).
  CHECK(symmetric >= 4 * 2 * 3 * 3);
  // Recursive doubling allgather and recursive halving reduce_scatter, by
  // xor, at every p, layout and size.
  CHECK(by_xor == 2 * 2 * 3 * 3);
  // The node-aware exchanges, whose nodes each start with the next node
  // (NodeGroups::other_nodes), at every p, layout and size; the overlapped
  // allreduce (by xor) at 256 KiB and 4 MiB, and at 64 B only on two nodes
  // (16 and 64 of them split a lane's few elements into blocks of which
  // some are empty: lanes then differ).
  CHECK(node_exchanges == 5 * 2 * 3 * 3 + 2 * 3 * 2 + 1);
}

TEST_CASE("model: 16,384 ranks on representative ranks; ring allreduce stays flat at 1 GiB", "[model]") {
  const model::Machine m = network_only(2.0, 10.0);
  const size_t n = size_t{1} << 30;
  const double at64 = predict_us(Collective::Allreduce, "ring", n, 64, 8, m);
  const algos::Algorithm* ring = algos::find_algorithm(Collective::Allreduce, "ring");
  CollArgs args{.coll = Collective::Allreduce, .dtype = Datatype::Float32, .op = Op::Sum};
  args.count = n / 4;
  const model::Prediction big = model::predict(*ring, args, model::model_topology(16384, 8), m);
  INFO("64 ranks " << at64 << " us, 16384 ranks " << big.us << " us: " << big.error);
  REQUIRE(big.error.empty());
  CHECK(big.representative);
  // 2(p-1)/p n/beta: the same within a few percent; alpha adds 2(p-1)
  // alpha = 65 ms at 16,384 ranks on 2 x 107 ms of bandwidth term.
  const double bandwidth_term = 2.0 * static_cast<double>(n) / (10.0 * 1e3);
  CHECK(big.us >= bandwidth_term);
  CHECK(big.us <= bandwidth_term + 2.0 * 16383 * 2.0 * 1.05);
  CHECK(at64 <= big.us);
}

TEST_CASE("model: ranks that outnumber their node's cores take turns on them", "[model]") {
  // Copies inside the node cost as much as a local copy.
  model::Machine m = bytes_at_1gbps();
  const size_t bytes = size_t{1} << 20;
  auto at = [&](int cores, Collective coll, std::string_view algo) {
    m.cores_per_node = cores;
    return predict_us(coll, algo, bytes, 4, 4, m);
  };
  // Ring allgather: every rank copies at once in every round; on 2 cores
  // the 4 copies of a round take two turns.
  const double own = at(0, Collective::Allgather, "ring");
  INFO("ring allgather: " << own << " us on a core each, " << at(2, Collective::Allgather, "ring")
                          << " on 2 cores");
  CHECK(at(4, Collective::Allgather, "ring") == Approx(own));
  CHECK(at(2, Collective::Allgather, "ring") == Approx(2 * own).epsilon(0.05));
  CHECK(at(1, Collective::Allgather, "ring") == Approx(4 * own).epsilon(0.05));
  // Linear gather: only the root receives (one message at a time through
  // its port), so a shared core changes nothing.
  CHECK(at(2, Collective::Gather, "linear") == Approx(at(0, Collective::Gather, "linear")));
}

TEST_CASE("model: nodes that share a machine's cores stretch CPU work and messages by ranks / cores",
          "[model]") {
  model::Machine m = bytes_at_1gbps();
  const size_t bytes = size_t{1} << 20;
  auto at = [&](int host_cores, Collective coll, std::string_view algo) {
    m.host_cores = host_cores;
    return predict_us(coll, algo, bytes, 4, 2, m);  // 2 nodes of 2 ranks
  };
  // 4 ranks on 2 shared cores: every byte, inside a node or between nodes,
  // moves at half the rate, and the alpha of each message does not.
  for (const auto& [coll, algo] : {std::pair{Collective::Allgather, "ring"},
                                   std::pair{Collective::Alltoall, "pairwise"},
                                   std::pair{Collective::Bcast, "tree"}}) {
    const double own = at(0, coll, algo);
    INFO(algo << ": " << own << " us on separate machines, " << at(2, coll, algo)
              << " on 2 shared cores");
    CHECK(at(4, coll, algo) == Approx(own));  // as many cores as ranks
    CHECK(at(2, coll, algo) == Approx(2 * own).epsilon(0.02));
    CHECK(at(1, coll, algo) == Approx(4 * own).epsilon(0.02));
  }
  CHECK(model::parse_machine("[compute]\nhost_cores = 2\n", "host.toml").host_cores == 2);
  CHECK(model::Machine{}.host_cores == 0);
}

TEST_CASE("model: a link's line is the least-squares fit of its ping-pong times", "[model]") {
  // 2 us + bytes at 1 GB/s, with noise of +-0.5 us: the fit finds the rate
  // within 10%, where the two end points alone would be 25% off.
  const std::optional<model::FittedLine> line =
      model::fit_line({{8, 2.5}, {4096, 5.6}, {8192, 10.7}, {16384, 17.9}});
  REQUIRE(line);
  CHECK(line->bytes_per_us == Approx(1e3).epsilon(0.1));
  CHECK(line->alpha_us >= 0);
  CHECK(line->alpha_us < 3);
  // Times that do not grow with the bytes give no line (the caller keeps
  // another rate), not an absurd one.
  CHECK_FALSE(model::fit_line({{8, 10.0}, {4096, 9.9}}));
  CHECK_FALSE(model::fit_line({{8, 10.0}}));
  CHECK_FALSE(model::fit_line({{4096, 10.0}, {4096, 12.0}}));
}

TEST_CASE("model: copies and reductions that fit the shared cache run at its rate", "[model]") {
  model::Machine m;
  m.copy_bytes_per_us = 5e3;
  m.copy_cached_bytes_per_us = 25e3;
  m.reduce_bytes_per_us = 4e3;
  m.reduce_cached_bytes_per_us = 16e3;
  m.cache_bytes = 4 << 20;
  // The node's ranks share the cache: 1 MiB each fits for 4 ranks, not 8.
  CHECK(m.copy_rate(1 << 20, 4) == 25e3);
  CHECK(m.copy_rate(1 << 20, 8) == 5e3);
  CHECK(m.reduce_rate(1 << 20, 4) == 16e3);
  CHECK(m.reduce_rate(2 << 20, 4) == 4e3);
  CHECK(m.copy_rate(1 << 20, 1) == 5e3);  // alone on its node: from the network
  // The shared-segment allreduce of 2 MiB on 2 ranks: copies and sums of at
  // most 2 MiB each.
  const double cached = predict_us(Collective::Allreduce, "shm", 2 << 20, 2, 2, m);
  m.cache_bytes = 0;
  const double uncached = predict_us(Collective::Allreduce, "shm", 2 << 20, 2, 2, m);
  INFO(cached << " us from the cache, " << uncached << " us without");
  CHECK(cached < 0.5 * uncached);
}

TEST_CASE("model: the shared segment's flags, peer reads and direct calls", "[model]") {
  model::Machine m;
  m.intra = {5.0, 5e3};  // a message inside the node: 5 us
  m.call_us = 1.0;
  auto shm_8b = [&](std::string_view algo) {
    return predict_us(Collective::Allreduce, algo, 8, 2, 2, m);
  };
  // A flag is a store another core sees, not a message.
  const double as_message = shm_8b("shm");
  m.flag_us = 0.1;
  const double as_flag = shm_8b("shm");
  INFO("shm allreduce of 8 B: " << as_message << " us with flags as messages, " << as_flag);
  CHECK(as_flag < as_message - 4.0);
  // A small blocking shm call runs on the caller's thread: direct_call_us,
  // not call_us; an algorithm that sends messages keeps call_us.
  const double ring = shm_8b("ring");
  m.direct_call_us = 0.25;
  CHECK(shm_8b("shm") == Approx(as_flag - 0.75));
  CHECK(shm_8b("ring") == Approx(ring));
  // Each cross-memory read pays its system call.
  const double cma = shm_8b("cma");
  m.peer_read_us = 2.0;
  CHECK(shm_8b("cma") >= cma + 2.0);
  // A read's bytes at peer_read_gbps where calibrated, else at the
  // rendezvous rate inside the node: 1 MiB alltoall "cma" on 2 ranks reads
  // 512 KiB per rank.
  m.intra.rndv_bytes_per_us = 8e3;
  const double as_rndv = predict_us(Collective::Alltoall, "cma", 1 << 20, 2, 2, m);
  m.peer_read_bytes_per_us = 32e3;
  const double as_read = predict_us(Collective::Alltoall, "cma", 1 << 20, 2, 2, m);
  INFO("alltoall cma 1 MiB: " << as_rndv << " us at the rendezvous rate, " << as_read
                              << " at the read rate");
  CHECK(as_rndv - as_read == Approx(524288.0 / 8e3 - 524288.0 / 32e3).epsilon(0.01));
  m.peer_read_bytes_per_us = 0;
  // Reading what another core has just written into the segment: the
  // extra time over a local copy, for every operand read there. A 32 KiB
  // allreduce through the slots on 2 ranks reads the peer's 32 KiB once
  // (its reduction's second operand): 32 KiB at 8 against 2 GB/s.
  m.copy_bytes_per_us = 8e3;
  const double local = predict_us(Collective::Allreduce, "shm", 32 << 10, 2, 2, m);
  m.peer_copy_bytes_per_us = 2e3;
  CHECK(m.peer_copy_extra_us(32 << 10, 2) == Approx(32768.0 / 2e3 - 32768.0 / 8e3));
  const double remote = predict_us(Collective::Allreduce, "shm", 32 << 10, 2, 2, m);
  INFO("shm allreduce of 32 KiB: " << local << " us, reading peer-written lines " << remote);
  CHECK(remote >= local + m.peer_copy_extra_us(32 << 10, 2) - 1e-9);
  CHECK(shm_8b("ring") == Approx(ring));  // no segment, no charge
  m.peer_copy_bytes_per_us = 16e3;  // faster than a local copy: no charge
  CHECK(m.peer_copy_extra_us(32 << 10, 2) == 0);
  // Writing into the segment over lines the peer read: the extra time
  // over a local copy, for every copy into the segment up to
  // peer_write_max_bytes; a 32 KiB bcast through the slots on 2 ranks
  // copies the root's 32 KiB in once.
  m.peer_copy_bytes_per_us = 0;
  const double plain_bcast = predict_us(Collective::Bcast, "shm", 32 << 10, 2, 2, m);
  m.peer_write_bytes_per_us = 2e3;
  CHECK(m.peer_write_extra_us(32 << 10, 2) == Approx(32768.0 / 2e3 - 32768.0 / 8e3));
  const double written_bcast = predict_us(Collective::Bcast, "shm", 32 << 10, 2, 2, m);
  INFO("shm bcast of 32 KiB: " << plain_bcast << " us, writing over read lines " << written_bcast);
  CHECK(written_bcast >= plain_bcast + m.peer_write_extra_us(32 << 10, 2) - 1e-9);
  CHECK(shm_8b("ring") == Approx(ring));  // no segment, no charge
  // Above peer_write_max_bytes the readers' cores no longer hold the lines.
  CHECK(m.peer_write_extra_us(static_cast<size_t>(m.peer_write_max_bytes), 2) > 0);
  CHECK(m.peer_write_extra_us(static_cast<size_t>(m.peer_write_max_bytes) + 1, 2) == 0);
  const model::Machine parsed = model::parse_machine(
      "[intra]\npeer_write_gbps = 9\npeer_write_max_bytes = 65536\n", "write.toml");
  CHECK(parsed.peer_write_bytes_per_us == 9e3);
  CHECK(parsed.peer_write_max_bytes == 65536);
}

TEST_CASE("model: machine descriptions", "[model]") {
  const model::Machine m = model::parse_machine(
      "# an HDR node\n[intra]\nalpha_us = 0.3\nbeta_gbps = 20\n[inter]\nalpha_us = 1.5 # us\n"
      "beta_gbps = 25\nnics = 4\n[compute]\nreduce_gbps = 12\ncopy_gbps = 20\n[protocol]\n"
      "eager_bytes = 16384\n",
      "hdr.toml");
  CHECK(m.intra.alpha_us == 0.3);
  CHECK(m.intra.bytes_per_us == 20e3);
  CHECK(m.inter.alpha_us == 1.5);
  CHECK(m.inter.bytes_per_us == 25e3);
  CHECK(m.nics_per_node == 4);
  CHECK(m.reduce_bytes_per_us == 12e3);
  CHECK(m.copy_bytes_per_us == 20e3);
  CHECK(m.eager_bytes == 16384);
  CHECK(m.call_us == 0.5);  // the default where the file does not say
  CHECK(m.inter.inject_us == model::Machine{}.inter.inject_us);  // the built-in gap
  CHECK(model::parse_machine("[inter]\ninject_us = 0.25\n", "rate.toml").inter.inject_us == 0.25);
  CHECK(m.cores_per_node == 0);  // a core per rank
  CHECK(m.cache_bytes == 0);
  const model::Machine cpu = model::parse_machine(
      "[compute]\ncores_per_node = 2\ncache_bytes = 4194304\nreduce_cached_gbps = 15.5\n"
      "copy_cached_gbps = 25\n",
      "cpu.toml");
  CHECK(cpu.cores_per_node == 2);
  CHECK(cpu.cache_bytes == 4194304);
  CHECK(cpu.reduce_cached_bytes_per_us == 15.5e3);
  CHECK(cpu.copy_cached_bytes_per_us == 25e3);
  CHECK(m.flag_us < 0);  // as a message
  CHECK(m.direct_call_us < 0);  // as call_us
  const model::Machine segment = model::parse_machine(
      "[intra]\nflag_us = 0.08\npeer_read_us = 2.5\npeer_read_gbps = 18\npeer_copy_gbps = 6.5\n"
      "[protocol]\n"
      "direct_call_us = 0.1\n",
      "segment.toml");
  CHECK(segment.flag_us == 0.08);
  CHECK(segment.peer_read_us == 2.5);
  CHECK(segment.peer_read_bytes_per_us == 18e3);
  CHECK(m.peer_read_bytes_per_us == 0);  // not set: the rendezvous rate
  CHECK(segment.peer_copy_bytes_per_us == 6.5e3);
  CHECK(m.peer_copy_bytes_per_us == 0);  // not set: as a local copy
  CHECK(segment.direct_call_us == 0.1);
  // No rendezvous keys: large messages cost what small ones do.
  CHECK(m.inter.alpha(false) == 1.5);
  CHECK(m.inter.rate(false) == 25e3);

  // Two regimes: a message up to eager_bytes costs alpha + n/beta, a larger
  // one rndv_alpha + n/rndv_beta (a bcast between 2 nodes: one message).
  model::Machine two = model::parse_machine(
      "[inter]\nalpha_us = 2\nbeta_gbps = 1\nrndv_alpha_us = 10\nrndv_beta_gbps = 4\n"
      "[protocol]\neager_bytes = 4096\ncall_us = 0\n",
      "two.toml");
  CHECK(two.inter.alpha(true) == 2);
  CHECK(two.inter.rndv_alpha_us == 10);
  CHECK(two.inter.rate(false) == 4e3);
  const algos::Algorithm* bcast = algos::find_algorithm(Collective::Bcast, "tree");
  REQUIRE(bcast);
  const Topology pair = model::model_topology(2, 1);
  CollArgs args{.coll = Collective::Bcast, .count = 1000, .dtype = Datatype::Float32};
  CHECK(model::predict(*bcast, args, pair, two).us == Approx(2 + 4000.0 / 1e3));
  args.count = 1 << 18;  // 1 MiB, one segment
  args.params.chunk_bytes = 4 << 20;
  CHECK(model::predict(*bcast, args, pair, two).us == Approx(10 + (1 << 20) / 4e3));
  const auto refused = [](const std::string& text, const std::string& piece) {
    try {
      model::parse_machine(text, "m.toml");
    } catch (const Error& e) {
      INFO(e.what());
      CHECK(e.status() == TUTTI_ERR_INVALID_ARGUMENT);
      CHECK(std::string(e.what()).find(piece) != std::string::npos);
      return;
    }
    FAIL("accepted: " << text);
  };
  refused("[inter]\nalpha = 3\n", "m.toml:2: unknown key 'inter.alpha'");
  refused("[inter]\nbeta_gbps = 0\n", "inter.beta_gbps must be > 0");
  refused("[intra]\nalpha_us = -1\n", "expected a number >= 0");
  refused("[intra]\nalpha_us = fast\n", "expected a number >= 0");
  refused("[gpu]\n", "unknown section [gpu]");
  refused("[intra\n", "unclosed section");
  refused("alpha_us\n", "expected 'key = value'");
  CHECK_THROWS_AS(model::load_machine("/nonexistent/machine.toml"), Error);
}

// Rendezvous messages follow two lines (calibrated through the first size
// above the eager limit and 256 KiB, and through 256 KiB and 4 MiB): a
// message up to 256 KiB costs the first (at least its bytes at the large
// line's rate), a larger one the second, and its ports stream at the large
// line's rate.
// Each link may switch protocol at its own size.
TEST_CASE("model: the first rendezvous sizes and per-link eager limits", "[model]") {
  const model::Machine m = model::parse_machine(
      "[intra]\nalpha_us = 0.3\nbeta_gbps = 6\nrndv_alpha_us = 25\nrndv_beta_gbps = 10\n"
      "rndv_short_alpha_us = 4\nrndv_short_beta_gbps = 5\neager_bytes = 8192\n"
      "[inter]\nalpha_us = 20\nbeta_gbps = 1\n[protocol]\neager_bytes = 32768\ncall_us = 0\n",
      "short.toml");
  CHECK(m.intra.eager_bytes == 8192);
  CHECK(m.inter.eager_bytes < 0);
  CHECK(m.intra.rndv_short_alpha_us == 4);
  CHECK(m.intra.rndv_short_bytes_per_us == 5e3);
  CHECK(m.eager(m.intra, 8192));
  CHECK_FALSE(m.eager(m.intra, 16384));
  CHECK(m.eager(m.inter, 32768));  // the machine's limit
  CHECK_FALSE(m.eager(m.inter, 65536));
  // 16 KiB: the first line (4 + 3.3 us against 25 + 1.6): a lone message
  // takes the first line's time, its ports are busy for bytes / 10 GB/s.
  const model::LinkCost::Line small = m.intra.line(16384, false);
  CHECK(small.bytes_per_us == 10e3);
  CHECK(small.us(16384) == Approx(4 + 16384 / 5e3));
  // 4 MiB: the large line.
  const model::LinkCost::Line large = m.intra.line(4 << 20, false);
  CHECK(large.alpha_us == 25);
  CHECK(large.us(4 << 20) == Approx(25 + (4 << 20) / 10e3));
  // Eager messages never take a rendezvous line.
  CHECK(m.intra.line(4096, true).us(4096) == Approx(0.3 + 4096 / 6e3));

  // A bcast of 16 KiB between two ranks of one node: one rendezvous
  // message on the first line; of 8 KiB: eager.
  const algos::Algorithm* bcast = algos::find_algorithm(Collective::Bcast, "tree");
  REQUIRE(bcast);
  const Topology node = model::model_topology(2, 2);
  CollArgs args{.coll = Collective::Bcast, .count = 4096, .dtype = Datatype::Float32};
  args.params.chunk_bytes = 4 << 20;
  CHECK(model::predict(*bcast, args, node, m).us == Approx(4 + 16384 / 5e3));
  args.count = 2048;
  CHECK(model::predict(*bcast, args, node, m).us == Approx(0.3 + 8192 / 6e3));
  // Without the first line the 16 KiB message pays the large line's alpha.
  model::Machine one = m;
  one.intra.rndv_short_alpha_us = -1;
  args.count = 4096;
  CHECK(model::predict(*bcast, args, node, one).us == Approx(25 + 16384 / 10e3));
  // Where large messages run slower per byte than the first sizes (out of
  // the caches), the large line's handshake fits near 0 and lies below the
  // first line at 16 KiB; the first line still counts up to 256 KiB.
  model::Machine slower_large = m;
  slower_large.intra.rndv_alpha_us = 0;
  slower_large.intra.rndv_bytes_per_us = 4e3;
  slower_large.intra.rndv_short_alpha_us = 3;
  slower_large.intra.rndv_short_bytes_per_us = 8e3;
  CHECK(slower_large.intra.line(16384, false).us(16384) == Approx(3 + 16384 / 8e3));
  CHECK(slower_large.intra.line((256 << 10) + 1, false).us((256 << 10) + 1) ==
        Approx(((256 << 10) + 1) / 4e3));
}


// Inside a node, a rendezvous message whose bytes times the node's ranks fit
// in compute.cache_bytes follows the cached line (rndv_cached_*); a larger
// one, or one between nodes, the large line.
TEST_CASE("model: messages whose buffers stay in the caches take the cached line", "[model]") {
  const model::Machine m = model::parse_machine(
      "[intra]\nalpha_us = 0.3\nbeta_gbps = 6\nrndv_alpha_us = 0\nrndv_beta_gbps = 6\n"
      "rndv_cached_alpha_us = 3\nrndv_cached_beta_gbps = 12\neager_bytes = 8192\n"
      "[compute]\ncache_bytes = 4194304\ncopy_gbps = 1000000\nreduce_gbps = 1000000\n"
      "[protocol]\ncall_us = 0\n",
      "cached.toml");
  CHECK(m.intra.rndv_cached_alpha_us == 3);
  CHECK(m.intra.rndv_cached_bytes_per_us == 12e3);
  const double mib = 1 << 20;
  CHECK(m.intra.line(mib, false, true).us(mib) == Approx(3 + mib / 12e3));
  CHECK(m.intra.line(mib, false, false).us(mib) == Approx(mib / 6e3));
  CHECK(m.intra.line(4096, true, true).us(4096) == Approx(0.3 + 4096 / 6e3));  // eager: never
  CHECK(m.cached(1 << 20, 2));
  CHECK_FALSE(m.cached(4 << 20, 2));

  const algos::Algorithm* bcast = algos::find_algorithm(Collective::Bcast, "tree");
  REQUIRE(bcast);
  const Topology node = model::model_topology(2, 2);
  CollArgs args{.coll = Collective::Bcast, .count = (1 << 20) / 4, .dtype = Datatype::Float32};
  args.params.chunk_bytes = 16 << 20;
  CHECK(model::predict(*bcast, args, node, m).us == Approx(3 + mib / 12e3));
  args.count = (4 << 20) / 4;  // 4 MiB x 2 ranks: beyond the cache
  CHECK(model::predict(*bcast, args, node, m).us == Approx(4 * mib / 6e3));
  // Without a cache term every size takes the large line.
  model::Machine no_cache = m;
  no_cache.cache_bytes = 0;
  args.count = (1 << 20) / 4;
  CHECK(model::predict(*bcast, args, node, no_cache).us == Approx(mib / 6e3));
}

TEST_CASE("model: a message of bytes its sender just wrote costs written_send_factor more",
          "[model]") {
  const model::Machine m = model::parse_machine(
      "[intra]\nalpha_us = 0.5\nbeta_gbps = 10\nrndv_alpha_us = 2\nrndv_beta_gbps = 10\n"
      "written_send_factor = 2\n[compute]\ncopy_gbps = 1000000\nreduce_gbps = 1000000\n"
      "[protocol]\neager_bytes = 8192\ncall_us = 0\n",
      "written.toml");
  CHECK(m.intra.written_factor == 2);
  model::Machine plain = m;
  plain.intra.written_factor = 1;
  const size_t n = 1 << 20;
  const double wire = n / 10e3;
  // Two ranks: the root sends its own vector, which the call did not write.
  CHECK(predict_us(Collective::Bcast, "tree", n, 2, 2, m) ==
        Approx(predict_us(Collective::Bcast, "tree", n, 2, 2, plain)));
  // Four: rank 2 forwards to rank 3 what it received from the root (in
  // pipelined segments), at twice the bytes' time; the root's messages are
  // its own vector. So the call takes longer, by at most the forwarded
  // bytes' time once more.
  const double four_plain = predict_us(Collective::Bcast, "tree", n, 4, 4, plain);
  const double four_written = predict_us(Collective::Bcast, "tree", n, 4, 4, m);
  CHECK(four_written > 1.05 * four_plain);
  CHECK(four_written <= four_plain + wire + 1e-6);
  // Eager messages are not affected; a gather sends the callers' inputs.
  CHECK(predict_us(Collective::Bcast, "tree", 4096, 4, 4, m) ==
        Approx(predict_us(Collective::Bcast, "tree", 4096, 4, 4, plain)));
  CHECK(predict_us(Collective::Gather, "linear", 4 * n, 4, 4, m) ==
        Approx(predict_us(Collective::Gather, "linear", 4 * n, 4, 4, plain)));
  CHECK_THROWS_WITH(model::parse_machine("[intra]\nwritten_send_factor = 0\n", "bad.toml"),
                    Catch::Contains("intra.written_send_factor must be > 0"));
}

}  // namespace tutti::testing

namespace tutti::testing {

// Model-driven dispatch (tuning/model_choice.hpp): on job shapes the
// built-in rules were not measured on, the dispatcher's choice is within
// 10% of the best time the model predicts for the call, computed here
// independently of the dispatcher; the predictions are cached per size
// class; measured shapes keep the built-in rules.
TEST_CASE("model: the dispatcher follows the model beyond the measured job shapes", "[model]") {
  const model::Machine m;
  struct Shape {
    int ranks, per_node;
  };
  for (const Shape s : {Shape{64, 8}, Shape{16, 1}, Shape{48, 4}}) {
    const Topology topo = model::model_topology(s.ranks, s.per_node);
    const Dispatcher dispatcher(TuningTable{}, topo, m);
    for (const Collective coll : kAllCollectives) {
      if (coll == Collective::Alltoallv) continue;
      for (uint64_t bytes = coll == Collective::Barrier ? 0 : 64; bytes <= (uint64_t{16} << 20);
           bytes = bytes == 0 ? uint64_t{1} << 40 : bytes * 16) {
        CollArgs args{.coll = coll, .dtype = Datatype::Float32, .op = Op::Sum, .root = 1};
        args.count = count_for_message_bytes(coll, bytes, args.dtype, s.ranks);
        if (coll != Collective::Barrier && args.count == 0) continue;  // returns before dispatch
        const Decision d = dispatcher.select(args, "", "");
        INFO(collective_name(coll) << " " << bytes << " B on " << s.ranks << " ranks, "
                                   << s.per_node << " per node: " << d.algorithm->name << " ("
                                   << d.reason << ")");
        REQUIRE(d.model);
        CHECK(d.reason.rfind("model:", 0) == 0);
        // The same call again: the cached predictions, not new ones.
        CHECK(dispatcher.select(args, "", "").model == d.model);
        // Every algorithm predicted here, at the class's count.
        CollArgs at_class = args;
        at_class.count = d.model->class_count;
        double best = -1, chosen = -1;
        for (const algos::Algorithm* a : algos::algorithms_for(coll)) {
          if (a->is_mpi()) continue;
          const model::Prediction pr = model::predict(*a, at_class, topo, m);
          if (!pr.error.empty()) continue;
          if (best < 0 || pr.us < best) best = pr.us;
          if (a == d.algorithm) chosen = pr.us;
        }
        REQUIRE(best > 0);
        REQUIRE(chosen > 0);
        CHECK(chosen <= 1.10 * best);
      }
    }
  }
  // The emulated cluster's shapes (2-4 nodes of up to 2 ranks) and one node
  // keep the measured rules; so do device buffers.
  const Dispatcher two_by_two(TuningTable{}, model::model_topology(4, 2), m);
  CollArgs args{.coll = Collective::Allreduce, .count = 1024, .dtype = Datatype::Float32};
  Decision d = two_by_two.select(args, "", "");
  CHECK_FALSE(d.model);
  CHECK(d.reason.rfind("rule built-in", 0) == 0);
  const Dispatcher eight_nodes(TuningTable{}, model::model_topology(16, 2), m);
  args.memory = MemoryType::Cuda;
  CHECK_FALSE(eight_nodes.select(args, "", "").model);
  // A rule of the user's table comes before the model.
  args.memory = MemoryType::Host;
  const Dispatcher with_rule(
      TuningTable({TuningRule{.coll = Collective::Allreduce, .algorithm = "tree", .origin = "test"}}),
      model::model_topology(16, 2), m);
  d = with_rule.select(args, "", "");
  CHECK(d.algorithm->name == "tree");
  CHECK_FALSE(d.model);
}

}  // namespace tutti::testing

namespace tutti::testing {

// Schedules too large to run and not symmetric (rooted trees and pipelines
// of large messages) are extrapolated from smaller counts: against the
// exact run where both are possible, on a limit small enough to force it.
TEST_CASE("model: extrapolated large messages agree with the exact run", "[model]") {
  const model::Machine m;
  const Topology topo = model::model_topology(64, 8);
  int extrapolated = 0;
  for (const algos::Algorithm& a : algos::all_algorithms()) {
    if (a.is_mpi() || a.coll == Collective::Alltoallv || a.coll == Collective::Barrier) continue;
    CollArgs args{.coll = a.coll, .dtype = Datatype::Float32, .op = Op::Sum, .root = 5};
    args.count = count_for_message_bytes(a.coll, size_t{64} << 20, args.dtype, 64);
    if (a.refuse(args, topo)) continue;
    const model::Prediction exact = model::predict(a, args, topo, m);
    REQUIRE(exact.error.empty());
    if (exact.representative) continue;
    const model::Prediction small = model::predict(a, args, topo, m, size_t{1} << 14);
    if (!small.extrapolated) continue;
    ++extrapolated;
    INFO(collective_name(a.coll) << " " << a.name << ": exact " << exact.us << " us, extrapolated "
                                 << small.us << " us");
    CHECK(small.us == Approx(exact.us).epsilon(0.15));
  }
  CHECK(extrapolated >= 6);
}

}  // namespace tutti::testing

namespace tutti::testing {

// The large-p algorithms (recursive_multiplying allreduce, knomial bcast
// and reduce): their schedules match up (every message sent is received) at
// every p from 1 to 1,024 and at 4,096 and 16,384 ranks, and at 8 B on many
// ranks they take fewer latencies than their radix-2 counterparts where
// posting a message costs nothing beyond its latency (with the built-in
// per-message gap, the k-1 messages of each level cost more than the
// levels saved: docs/SCALE.md).
TEST_CASE("model: the radix-k algorithms run at every p to 1,024 and beat radix 2 at scale", "[model]") {
  model::Machine m;
  m.inter.inject_us = 0;
  struct Pair {
    Collective coll;
    const char* radix_k;
    const char* radix_2;
  };
  for (const Pair& pair : {Pair{Collective::Allreduce, "recursive_multiplying", "recursive_doubling"},
                           Pair{Collective::Bcast, "knomial", "tree"},
                           Pair{Collective::Reduce, "knomial", "tree"}}) {
    const algos::Algorithm* fast_algo = algos::find_algorithm(pair.coll, pair.radix_k);
    const algos::Algorithm* slow_algo = algos::find_algorithm(pair.coll, pair.radix_2);
    REQUIRE(fast_algo);
    REQUIRE(slow_algo);
    CollArgs args{.coll = pair.coll, .count = 2, .dtype = Datatype::Float32, .op = Op::Sum};
    for (int p = 1; p <= 1024; ++p) {
      args.root = p / 3;
      const model::Prediction pr = model::predict(*fast_algo, args, model::model_topology(p, 8), m);
      INFO(pair.radix_k << " " << p << " ranks: " << pr.error);
      REQUIRE(pr.error.empty());
    }
    args.root = 0;
    for (int p : {4096, 16384}) {
      const Topology topo = model::model_topology(p, 8);
      const model::Prediction fast = model::predict(*fast_algo, args, topo, m);
      const model::Prediction slow = model::predict(*slow_algo, args, topo, m);
      INFO(collective_name(pair.coll) << " " << p << " ranks: " << pair.radix_k << " " << fast.us
                                      << " us, " << pair.radix_2 << " " << slow.us);
      REQUIRE(fast.error.empty());
      // log4(p) levels against log2(p): about half.
      CHECK(fast.us < 0.65 * slow.us);
    }
  }
}

}  // namespace tutti::testing

namespace tutti::testing {

// The pipelined binary trees (bcast and reduce binary_tree and
// binary_leader_shm): their
// schedules match up at every p from 1 to 1,024 (8 ranks a node, roots
// other than 0, several segments), and at 4,096 and 16,384 ranks a large
// vector takes well under the binomial trees' time, whose root sends it
// (or receives) ceil(log2 P) times: the bandwidth term of 2n, not
// log2(P) n. The flat
// tree on nodes of one rank: on nodes of 8, most of its edges cross
// between nodes and the node's NIC carries 8 ranks' sends (slower than the
// binomial tree there, as the model says and the dispatcher knows).
TEST_CASE("model: the pipelined binary trees run at every p to 1,024 and beat binomial at scale",
          "[model]") {
  const model::Machine m;
  struct Pair {
    Collective coll;
    const char* binary;
    const char* binomial;
    int ranks_per_node;
  };
  for (const Pair& pair : {Pair{Collective::Bcast, "binary_tree", "tree", 1},
                           Pair{Collective::Bcast, "binary_leader_shm", "leader_shm", 8},
                           Pair{Collective::Reduce, "binary_tree", "tree", 1},
                           Pair{Collective::Reduce, "binary_leader_shm", "leader_shm", 8}}) {
    const algos::Algorithm* binary = algos::find_algorithm(pair.coll, pair.binary);
    const algos::Algorithm* binomial = algos::find_algorithm(pair.coll, pair.binomial);
    REQUIRE(binary);
    REQUIRE(binomial);
    // 1 MiB in 256 KiB segments: four of them in flight along the tree.
    CollArgs args{.coll = pair.coll, .count = 1 << 18, .dtype = Datatype::Float32, .op = Op::Sum};
    for (int p = 1; p <= 1024; ++p) {
      args.root = p / 3;
      const model::Prediction pr = model::predict(*binary, args, model::model_topology(p, 8), m);
      INFO(collective_name(pair.coll) << " " << pair.binary << " " << p << " ranks: " << pr.error);
      REQUIRE(pr.error.empty());
    }
    args.root = 0;
    args.count = 2 << 20;  // 8 MiB
    for (int p : {4096, 16384}) {
      const Topology topo = model::model_topology(p, pair.ranks_per_node);
      const model::Prediction fast = model::predict(*binary, args, topo, m);
      const model::Prediction slow = model::predict(*binomial, args, topo, m);
      INFO(collective_name(pair.coll) << " " << p << " ranks: " << pair.binary << " " << fast.us << " us, " << pair.binomial << " "
             << slow.us);
      REQUIRE(fast.error.empty());
      REQUIRE(slow.error.empty());
      CHECK(fast.us < 0.5 * slow.us);
    }
  }
}

}  // namespace tutti::testing

namespace tutti::testing {

// Predicted time of allreduce hierarchical_shm_overlap and of
// hierarchical_shm (the phases in turn) on `nodes` nodes of `ranks_per_node`,
// in chunks of `chunk_bytes` (0: each one's default).
static std::pair<double, double> overlap_and_in_turn_us(int nodes, int ranks_per_node,
                                                        size_t bytes, size_t chunk_bytes) {
  const model::Machine m;
  const algos::Algorithm* overlap =
      algos::find_algorithm(Collective::Allreduce, "hierarchical_shm_overlap");
  const algos::Algorithm* in_turn = algos::find_algorithm(Collective::Allreduce, "hierarchical_shm");
  REQUIRE(overlap);
  REQUIRE(in_turn);
  CollArgs args{.coll = Collective::Allreduce, .count = bytes / 4, .dtype = Datatype::Float32,
                .op = Op::Sum};
  args.params.chunk_bytes = chunk_bytes;
  const Topology topo = model::model_topology(nodes * ranks_per_node, ranks_per_node);
  const model::Prediction fast = model::predict(*overlap, args, topo, m);
  const model::Prediction slow = model::predict(*in_turn, args, topo, m);
  REQUIRE(fast.error.empty());
  REQUIRE(slow.error.empty());
  return {fast.us, slow.us};
}

// allreduce hierarchical_shm_overlap runs each chunk's exchange between the
// two nodes while the node works on the chunks around it: the model puts
// it below hierarchical_shm's time (same 128 KiB chunks) from 256 KiB on 2
// nodes of 2 and of 4 ranks, and within a few microseconds of it below
// (a vector of one or two chunks has nothing to overlap).
TEST_CASE("model: the overlapped node-aware allreduce beats the phases in turn on two nodes",
          "[model]") {
  for (int ranks_per_node : {2, 4}) {
    for (size_t bytes : {size_t{64} << 10, size_t{256} << 10, size_t{1} << 20, size_t{4} << 20}) {
      const auto [fast, slow] = overlap_and_in_turn_us(2, ranks_per_node, bytes, 128 * 1024);
      INFO(ranks_per_node << " ranks a node, " << bytes << " B: overlap " << fast
                          << " us, in turn " << slow << " us");
      if (bytes >= (size_t{256} << 10)) CHECK(fast < 0.9 * slow);
      else CHECK(fast < slow + 5);
    }
  }
}

// On 4 and 8 nodes its exchange is recursive halving then doubling (2
// log2(N) steps of a chunk each, up to 2S + 2 chunks in flight): the model
// puts it below hierarchical_shm with its default chunks from 1 MiB, by
// 15% from 4 MiB. Three nodes fold in and out (every slice crosses twice
// more) and stay with hierarchical_shm: the model has the overlap slower.
TEST_CASE("model: the overlapped node-aware allreduce on 4 and 8 nodes", "[model]") {
  for (int nodes : {4, 8}) {
    for (int ranks_per_node : {2, 4}) {
      for (size_t bytes : {size_t{1} << 20, size_t{4} << 20, size_t{16} << 20}) {
        const auto [fast, slow] = overlap_and_in_turn_us(nodes, ranks_per_node, bytes, 0);
        INFO(nodes << " nodes of " << ranks_per_node << ", " << bytes << " B: overlap " << fast
                   << " us, in turn " << slow << " us");
        CHECK(fast < (bytes >= (size_t{4} << 20) ? 0.85 : 0.95) * slow);
      }
    }
  }
  const auto [fast, slow] = overlap_and_in_turn_us(3, 2, size_t{4} << 20, 0);
  CHECK(fast > slow);
}

}  // namespace tutti::testing

namespace tutti::testing {

// Between nodes a send up to inter.send_eager_bytes (below tutti's
// rendezvous threshold across machines, 1 MiB) is done once injected, whatever the
// cost line's eager_bytes: a pipeline's root sends its next chunk without
// waiting for the last one to arrive. With every send a rendezvous, the
// 2-node bcast tree's eight 256 KiB chunks each paid the link's latency in
// turn (2 MiB predicted 2.6x its measured time, 2026-12-06).
TEST_CASE("model: sends up to send_eager_bytes between nodes are done once injected", "[model]") {
  const model::Machine eager;
  REQUIRE(eager.inter.send_eager_bytes == (1 << 20) - 1);
  CHECK(eager.intra.send_eager_bytes < 0);  // inside a node: the cost line's limit
  model::Machine rendezvous = eager;
  rendezvous.inter.send_eager_bytes = 0;
  const algos::Algorithm* tree = algos::find_algorithm(Collective::Bcast, "tree");
  REQUIRE(tree);
  CollArgs args{.coll = Collective::Bcast, .count = 1 << 19, .dtype = Datatype::Float32, .op = Op::Sum};
  args.params.chunk_bytes = 256 << 10;  // 8 chunks
  const Topology topo = model::model_topology(2, 1);
  const model::Prediction streamed = model::predict(*tree, args, topo, eager);
  const model::Prediction waited = model::predict(*tree, args, topo, rendezvous);
  REQUIRE(streamed.error.empty());
  REQUIRE(waited.error.empty());
  INFO("streamed " << streamed.us << " us, every chunk waited for " << waited.us << " us");
  CHECK(waited.us - streamed.us > 0.9 * 7 * eager.inter.alpha_us);
  CHECK(model::parse_machine("[inter]\nsend_eager_bytes = 65536\n", "p.toml").inter.send_eager_bytes ==
        65536);
}

}  // namespace tutti::testing
