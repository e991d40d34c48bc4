// Every collective x every registered algorithm (forced one by one, the MPI
// fallback included) x datatype x op (data movement: each element size), in
// place and not, at roots 0 and P-1, blocking and non-blocking, on counts 0,
// 1, primes and >= 1 MiB per rank, checked on every rank against a reference
// computed from all ranks' inputs.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "algos/registry.hpp"
#include "base/status.hpp"
#include "host/half.hpp"
#include "mpi_harness.hpp"
#include "user_call.hpp"

namespace tutti::testing {
namespace {

// Runs cases and checks each result. Where `forced` names the algorithm
// forced for them, also that it ran: a refusal would fall back to another
// algorithm silently and its result would be checked instead. Where
// `refusal_expected`, that it refused each call (counted) and another ran.
struct Sweep {
  std::string forced;  // "" where the dispatcher chooses
  bool refusal_expected = false;
  // Refused by non-blocking calls only (they cannot exchange counts first).
  bool refusal_expected_nonblocking = false;
  std::vector<std::string> failures;
  size_t cases = 0;
  void run(const CollArgs& args, uint64_t seed, bool nonblocking) {
    ++cases;
    const ForcedRunCheck forced_run(world(), forced,
                                    refusal_expected || (nonblocking && refusal_expected_nonblocking));
    std::string error = check_collective(args, seed, nonblocking);
    if (error.empty() && !forced.empty()) error = forced_run.after(args);
    if (!error.empty() && failures.size() < 20) failures.push_back(std::move(error));
  }
};

// TUTTI_CMA=0: the single-copy algorithms refuse.
bool cma_turned_off() {
  const char* v = std::getenv("TUTTI_CMA");
  return v && std::string(v) == "0";
}

// Whether MPI places the world's ranks on more than one node.
bool spans_nodes() {
  static const bool spans = !all_ranks(ranks_on_this_node() == world_size());
  return spans;
}

// Whether MPI's nodes hold different numbers of the world's ranks (2+1+2).
bool uneven_nodes() {
  const int local = ranks_on_this_node();
  int fewest = 0, most = 0;
  MPI_Allreduce(&local, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&local, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return fewest != most;
}

// Whether forcing `algo` for `coll` on the world must be refused.
bool refusal_expected(Collective coll, const std::string& algo) {
  const int p = world_size();
  // shm, lines and cma refuse every call where there is no shared segment to share: on
  // one rank, and where the ranks span several nodes. alltoall
  // hierarchical_shm needs every node to hold as many ranks (one lane per
  // local rank).
  return ((algo == "shm" || algo == "lines") && (p == 1 || spans_nodes())) ||
         // cma also needs ranks that may read each other's memory, which the
         // machines this runs on allow (root, or one user and ptrace scope 0/1).
         (algo == "cma" && (p == 1 || spans_nodes() || cma_turned_off())) ||
         // leader_cma and alltoall's pairwise_cma read inside the nodes of
         // several ranks, on any number of nodes.
         ((algo == "leader_cma" || algo == "pairwise_cma") && cma_turned_off() &&
          !all_ranks(ranks_on_this_node() == 1)) ||
         (coll == Collective::Alltoall && algo == "hierarchical_shm" && uneven_nodes()) ||
         // alltoallv hierarchical_shm builds on its node's send counts, which
         // only calls across nodes exchange.
         (coll == Collective::Alltoallv && algo == "hierarchical_shm" && !spans_nodes());
}

size_t next_prime(size_t n) {
  auto prime = [](size_t k) {
    if (k < 2) return false;
    for (size_t d = 2; d * d <= k; ++d)
      if (k % d == 0) return false;
    return true;
  };
  while (!prime(n)) ++n;
  return n;
}

void sweep_algorithm(Collective coll, const std::string& algo, Sweep& sweep) {
  const int p = world_size();
  sweep.forced = algo;
  sweep.refusal_expected = refusal_expected(coll, algo);
  // alltoallv's node-aware algorithms need the node's send counts, which
  // only blocking calls exchange.
  sweep.refusal_expected_nonblocking = coll == Collective::Alltoallv &&
                                       (algo == "hierarchical" || algo == "hierarchical_shm") &&
                                       spans_nodes();
  REQUIRE(tutti_comm_force_algorithm(world(), std::string(collective_name(coll)).c_str(),
                                     algo.c_str()) == TUTTI_SUCCESS);
  std::vector<int> roots = {0};
  if (has_root(coll) && p > 1) roots.push_back(p - 1);
  uint64_t seed = 1000;
  int variant = 0;
  auto one = [&](size_t count, Datatype dt, Op op, bool in_place, int root) {
    CollArgs a;
    a.coll = coll;
    a.count = count;
    a.dtype = dt;
    a.op = op;
    a.in_place = in_place;
    a.root = root;
    sweep.run(a, ++seed, (++variant % 3) == 0);
  };
  const bool can_in_place = coll != Collective::Bcast && coll != Collective::Barrier;
  if (coll == Collective::Barrier) {
    for (int i = 0; i < 5; ++i) one(0, Datatype::Uint8, Op::Sum, false, 0);
  } else {
    // Small counts: a reduction runs every datatype x op at each (1031
    // elements: vector bodies and tails). Moving data depends on the
    // element size only: one datatype of each size. (Rotating the pairs at
    // 0, 1 and 7 saved only 2 s of CPU on 8 ranks: the large cases below
    // were the time.)
    const std::vector<Datatype> dtypes =
        is_reduction(coll) ? std::vector<Datatype>(std::begin(kAllDatatypes), std::end(kAllDatatypes))
                           : std::vector<Datatype>{Datatype::Uint8, Datatype::Bfloat16,
                                                   Datatype::Float32, Datatype::Int64};
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1031}})
      for (Datatype dt : dtypes)
        for (Op op : kAllOps) {
          if (!is_reduction(coll) && op != Op::Sum) continue;
          for (bool in_place : {false, true}) {
            if (in_place && !can_in_place) continue;
            for (int root : roots) one(count, dt, op, in_place, root);
          }
        }
    // Large: >= 1 MiB in each rank's whole buffer, a prime count. Where the
    // count is per block (a block to or from each rank), the block shrinks
    // with P: 1 MiB blocks made each case 1.3 s on 8 ranks on 2 cores
    // (P^2 MiB moved and checked), most of this test's time.
    const size_t large = next_prime(per_block(coll) ? 262147 / static_cast<size_t>(p) : 262147);
    for (bool in_place : {false, true}) {
      if (in_place && !can_in_place) continue;
      one(large, Datatype::Float32, is_reduction(coll) ? Op::Avg : Op::Sum, in_place, roots.back());
      one(large, Datatype::Int32, Op::Sum, in_place, 0);
    }
  }
  REQUIRE(tutti_comm_force_algorithm(world(), std::string(collective_name(coll)).c_str(), nullptr) ==
          TUTTI_SUCCESS);
}

void sweep_collective(Collective coll) {
  for (const algos::Algorithm* algo : algos::algorithms_for(coll)) {
    Sweep sweep;
    sweep_algorithm(coll, std::string(algo->name), sweep);
    INFO(collective_name(coll) << " " << algo->name << ": " << sweep.cases << " cases");
    for (const std::string& f : sweep.failures) FAIL_CHECK(f);
    CHECK(sweep.failures.empty());
  }
}

}  // namespace

TEST_CASE("allreduce: every algorithm", "[collectives]") { sweep_collective(Collective::Allreduce); }
TEST_CASE("reduce: every algorithm", "[collectives]") { sweep_collective(Collective::Reduce); }
TEST_CASE("bcast: every algorithm", "[collectives]") { sweep_collective(Collective::Bcast); }
TEST_CASE("allgather: every algorithm", "[collectives]") { sweep_collective(Collective::Allgather); }
TEST_CASE("reduce_scatter: every algorithm", "[collectives]") {
  sweep_collective(Collective::ReduceScatter);
}
TEST_CASE("gather: every algorithm", "[collectives]") { sweep_collective(Collective::Gather); }
TEST_CASE("scatter: every algorithm", "[collectives]") { sweep_collective(Collective::Scatter); }
TEST_CASE("alltoall: every algorithm", "[collectives]") { sweep_collective(Collective::Alltoall); }
TEST_CASE("alltoallv: every algorithm", "[collectives]") { sweep_collective(Collective::Alltoallv); }
TEST_CASE("barrier: every algorithm", "[collectives]") { sweep_collective(Collective::Barrier); }

TEST_CASE("default dispatch on every collective and size", "[collectives]") {
  Sweep sweep;
  uint64_t seed = 77;
  for (Collective coll : kAllCollectives)
    for (size_t count : {size_t{1}, size_t{100}, size_t{5000}, size_t{70000}}) {
      CollArgs a;
      a.coll = coll;
      a.count = coll == Collective::Barrier ? 0 : count;
      a.dtype = Datatype::Float32;
      a.root = world_size() / 2;
      sweep.run(a, ++seed, false);
    }
  for (const std::string& f : sweep.failures) FAIL_CHECK(f);
  CHECK(sweep.failures.empty());
}

// Averages of float16 divide each input by the rank count before the sum
// (premultiplies_average), so that an average is right wherever the inputs
// are: every rank's m * p (m a power of two, m * p at most 65504, float16's
// largest) sums to more than 65504 from two ranks on, and summing first
// would give inf; divided first, the sum is m * p again, exactly.
TEST_CASE("float16 averages whose sum overflows float16 are right with every algorithm",
          "[collectives]") {
  const int p = world_size();
  const int me = world_rank();
  float m = 1;
  while (m * 2 * static_cast<float>(p) <= 65504) m *= 2;
  const uint16_t x = float_to_half(m * static_cast<float>(p)).bits;
  std::vector<std::string> failures;
  for (Collective coll : {Collective::Allreduce, Collective::Reduce, Collective::ReduceScatter}) {
    for (const algos::Algorithm* algo : algos::algorithms_for(coll)) {
      const std::string name(algo->name);
      REQUIRE(tutti_comm_force_algorithm(world(), std::string(collective_name(coll)).c_str(),
                                         name.c_str()) == TUTTI_SUCCESS);
      for (bool in_place : {false, true}) {
        CollArgs a{.coll = coll, .count = 1031, .dtype = Datatype::Float16, .op = Op::Avg,
                   .root = p - 1, .in_place = in_place};
        const size_t in_count = coll == Collective::ReduceScatter ? a.count * p : a.count;
        std::vector<uint16_t> in(in_count, x), out(in_place ? in_count : a.count, 0);
        if (in_place) out = in;
        const void* send = in_place ? TUTTI_IN_PLACE : in.data();
        const ForcedRunCheck forced(world(), name, refusal_expected(coll, name));
        int rc = TUTTI_SUCCESS;
        switch (coll) {
          case Collective::Allreduce:
            rc = tutti_allreduce(send, out.data(), a.count, TUTTI_FLOAT16, TUTTI_AVG, world());
            break;
          case Collective::Reduce:
            if (in_place && me != a.root) send = in.data();  // in place only at the root
            rc = tutti_reduce(send, out.data(), a.count, TUTTI_FLOAT16, TUTTI_AVG, a.root, world());
            break;
          default:
            rc = tutti_reduce_scatter(send, out.data(), a.count, TUTTI_FLOAT16, TUTTI_AVG, world());
            break;
        }
        const std::string what = str(describe(a), " forced ", name, ": ");
        if (rc != TUTTI_SUCCESS) {
          failures.push_back(what + tutti_strerror(rc) + ": " + tutti_last_error());
          continue;
        }
        if (const std::string e = forced.after(a); !e.empty()) failures.push_back(e);
        if (coll == Collective::Reduce && me != a.root) continue;
        for (size_t i = 0; i < a.count; ++i)
          if (out[i] != x) {
            failures.push_back(str(what, "element ", i, " is ", half_to_float(Half{out[i]}),
                                   ", not ", m * static_cast<float>(p)));
            break;
          }
      }
    }
    REQUIRE(tutti_comm_force_algorithm(world(), std::string(collective_name(coll)).c_str(),
                                       nullptr) == TUTTI_SUCCESS);
  }
  for (const std::string& f : failures) FAIL_CHECK(f);
  CHECK(failures.empty());
}

// alltoallv "hierarchical" and "hierarchical_shm" build on their node's
// send counts, exchanged on every call: a plan kept for a rank whose own
// counts did not change must still be rebuilt when a neighbour's did. Rank
// 1's block for rank p/2 grows and shrinks; rank 0 (rank 1's neighbour
// under mpirun's numbering, and rank p/2's lane on 2 x 2 and 2+1+2) keeps
// its own layout throughout. `refused`: the algorithm must refuse every call
// (and the results still be right).
void check_follows_changed_counts(const char* algo, bool refused) {
  const int p = world_size(), me = world_rank();
  REQUIRE(tutti_comm_force_algorithm(world(), "alltoallv", algo) == TUTTI_SUCCESS);
  auto count = [p](int from, int to, int call) -> size_t {
    const bool grown = call % 2 == 1 && from == 1 && to == p / 2 && p > 2;
    return 2 + static_cast<size_t>(from + to) % 3 + (grown ? 40 : 0);
  };
  auto value = [](int from, int to, size_t k) {
    return static_cast<int32_t>(from * 1000000 + to * 1000 + static_cast<int>(k));
  };
  std::vector<std::string> failures;
  for (int call = 0; call < 4; ++call) {
    std::vector<size_t> sc(p), sd(p), rc(p), rd(p);
    size_t sent = 0, received = 0;
    for (int q = 0; q < p; ++q) {
      sc[q] = count(me, q, call), sd[q] = sent, sent += sc[q];
      rc[q] = count(q, me, call), rd[q] = received, received += rc[q];
    }
    std::vector<int32_t> in(sent), out(received, -1);
    for (int q = 0; q < p; ++q)
      for (size_t k = 0; k < sc[q]; ++k) in[sd[q] + k] = value(me, q, k);
    const ForcedRunCheck forced(world(), algo, refused);
    const int status = tutti_alltoallv(in.data(), sc.data(), sd.data(), out.data(), rc.data(),
                                       rd.data(), TUTTI_INT32, world());
    if (status != TUTTI_SUCCESS) {
      failures.push_back(str("call ", call, ": ", tutti_strerror(status), ": ", tutti_last_error()));
      break;
    }
    CollArgs a{.coll = Collective::Alltoallv};
    if (const std::string e = forced.after(a); !e.empty()) failures.push_back(e);
    for (int q = 0; q < p; ++q)
      for (size_t k = 0; k < rc[q]; ++k)
        if (out[rd[q] + k] != value(q, me, k)) {
          failures.push_back(str("call ", call, " rank ", me, ": element ", k, " from rank ", q,
                                 " is ", out[rd[q] + k], ", not ", value(q, me, k)));
          q = p;
          break;
        }
  }
  REQUIRE(tutti_comm_force_algorithm(world(), "alltoallv", nullptr) == TUTTI_SUCCESS);
  for (const std::string& f : failures) FAIL_CHECK(f);
  CHECK(failures.empty());
}

TEST_CASE("alltoallv hierarchical follows a neighbour's changed counts", "[collectives]") {
  check_follows_changed_counts("hierarchical", false);
}

TEST_CASE("alltoallv hierarchical_shm follows a neighbour's changed counts", "[collectives]") {
  // On one node it refuses every call (nobody exchanges counts there).
  check_follows_changed_counts("hierarchical_shm", !spans_nodes());
}

}  // namespace tutti::testing
