// Every registered algorithm, run by the real engine over the simulated
// network for rank counts 1-24, around 32 and 64, and 100-1,000, on counts that
// are 0, 1, primes, smaller and larger than the rank count, in place and not,
// at several roots, with every datatype x op combination at small scale, and
// forced into small pipeline chunks so the multi-chunk paths run too.
#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <thread>

#include "sim_runner.hpp"

namespace tutti::testing {
namespace {

struct Case {
  CollArgs args;
  int nranks;
  SimNetwork::Mode mode = SimNetwork::Mode::Rendezvous;
  bool threaded = false;  // each rank on its own thread
  std::vector<int> node_of_rank;  // empty: one node
  size_t shared_bytes = SimOptions{}.shared_bytes;  // of each node's segment
  bool peer_reads = true;                           // SimOptions::peer_reads
};

std::string describe_case(const algos::Algorithm& algo, const Case& c) {
  std::string nodes;
  for (int node : c.node_of_rank) nodes += str(node);
  return str(algo.name, " ", describe(c.args), " nranks=", c.nranks,
             nodes.empty() ? "" : str(" nodes=", nodes, " shared=", c.shared_bytes),
             " chunk=", c.args.params.chunk_bytes, c.peer_reads ? "" : " no-peer-reads",
             c.mode == SimNetwork::Mode::Eager ? " eager" : " rendezvous");
}

bool can_be_in_place(Collective c) { return c != Collective::Bcast && c != Collective::Barrier; }

// Rank arguments, inputs and expected outputs of one case.
struct PreparedCase {
  // alltoallv: the counts call.args point into (moving the vector keeps
  // its elements where they are).
  std::vector<AlltoallvLayout> layouts;
  // alltoallv: every rank's node's send counts (CollArgs::node_send_counts).
  std::vector<std::vector<size_t>> node_counts;
  SimCall call;
  std::vector<Bytes> want;
};

// Null if the algorithm refuses the case.
std::optional<PreparedCase> prepare_case(const algos::Algorithm& algo, const Case& c, uint64_t seed) {
  const int p = c.nranks;
  std::vector<CollArgs> args(static_cast<size_t>(p), c.args);
  std::vector<AlltoallvLayout> layouts;
  std::vector<std::vector<size_t>> node_counts(static_cast<size_t>(p));
  if (c.args.coll == Collective::Alltoallv) {
    for (int r = 0; r < p; ++r)
      layouts.push_back(alltoallv_layout(r, p, c.args.count, seed, c.args.in_place, seed % 2 == 0));
    for (int r = 0; r < p; ++r) layouts[r].attach(args[r]);
    // Each rank's node's send counts, as Comm exchanges them: the node's
    // ranks in rank order.
    for (int r = 0; r < p; ++r) {
      for (int q = 0; q < p; ++q) {
        const bool same_node = c.node_of_rank.empty() || c.node_of_rank[q] == c.node_of_rank[r];
        if (same_node)
          node_counts[r].insert(node_counts[r].end(), layouts[q].send_counts.begin(),
                                layouts[q].send_counts.end());
      }
      args[r].node_send_counts = node_counts[r];
      args[r].node_counts_exchangeable = true;
    }
  }
  // Only the root uses in-place for rooted collectives (MPI's rule).
  if (has_root(c.args.coll))
    for (int r = 0; r < p; ++r) args[r].in_place = c.args.in_place && r == c.args.root;

  SimOptions options;
  options.node_of_rank = c.node_of_rank;
  options.shared_bytes = c.shared_bytes;
  options.peer_reads = c.peer_reads;
  if (algo.refuse(args[0], sim_topology(p, options))) return std::nullopt;

  std::vector<Bytes> inputs;
  for (int r = 0; r < p; ++r) {
    const BufferShape shape = buffer_shape(args[r], r, p);
    size_t bytes = c.args.coll == Collective::Bcast ? shape.output_bytes : shape.input_bytes;
    if (c.args.coll == Collective::Scatter && r != c.args.root) bytes = 0;
    inputs.push_back(make_input(args[r], r, p, bytes, seed));
  }
  // Reference inputs: rooted collectives with absent inputs still need a
  // placeholder of the right size for the reference computation.
  std::vector<Bytes> want = reference_outputs(args, inputs);
  return PreparedCase{std::move(layouts), std::move(node_counts),
                      SimCall{&algo, std::move(args), std::move(inputs)}, std::move(want)};
}

// The first rank whose output differs from the reference, described; or "".
std::string compare_outputs(const SimOutcome& got, const std::vector<Bytes>& want, Datatype dtype) {
  for (size_t r = 0; r < want.size(); ++r) {
    std::string detail;
    if (first_difference(got.outputs[r], want[r], dtype, &detail) >= 0)
      return str("rank ", r, ": ", detail);
  }
  return "";
}

// Runs one case; returns an error description or "". `ran` tells whether
// the algorithm accepted the case at all.
std::string run_case(const algos::Algorithm& algo, const Case& c, uint64_t seed, bool& ran) {
  const std::optional<PreparedCase> prepared = prepare_case(algo, c, seed);
  ran = prepared.has_value();
  if (!ran) return "";  // not claimed
  SimOptions options;
  options.mode = c.mode;
  options.threaded = c.threaded;
  options.node_of_rank = c.node_of_rank;
  options.shared_bytes = c.shared_bytes;
  options.peer_reads = c.peer_reads;
  const SimCall& call = prepared->call;
  const SimOutcome got = run_in_sim(*call.algo, call.args, call.inputs, options);
  if (!got.error.empty()) return got.error;
  return compare_outputs(got, prepared->want, c.args.dtype);
}

std::vector<size_t> counts_for(int p, bool small) {
  std::vector<size_t> counts = {0, 1, 2, 7};
  counts.push_back(static_cast<size_t>(p) + 1);
  if (p > 2) counts.push_back(static_cast<size_t>(p) - 1);
  if (!small) counts.push_back(97);
  return counts;
}

// Whether the algorithm moves data or synchronises through the shared
// segment, whose flags grow as P^2 (64 MB at 1,000 ranks of one node).
bool uses_node_segment(const algos::Algorithm& algo) {
  // The single-copy ones ("cma") synchronise through the segment's flags;
  // "*_shm" and "*_shm_*" (hierarchical_shm_overlap) move data through it.
  return algo.name == "shm" || algo.name == "lines" || algo.name.ends_with("_shm") ||
         algo.name.find("_shm_") != std::string::npos || algo.name == "cma" ||
         algo.name.ends_with("_cma");
}

// The shape sweep's rank counts: every count to 24, then each power of two
// from 32 with its neighbours (where radix and halving logic turns) and a
// few in between (every count to 64 took twice as long).
std::vector<int> sweep_rank_counts() {
  std::vector<int> counts;
  for (int p = 1; p <= 24; ++p) counts.push_back(p);
  for (int p : {27, 31, 32, 33, 40, 47, 48, 49, 63, 64}) counts.push_back(p);
  return counts;
}

void check_algorithm(const algos::Algorithm& algo) {
  const std::vector<int> rank_counts = sweep_rank_counts();
  const Collective coll = algo.coll;
  uint64_t seed = 1;
  size_t cases = 0, accepted = 0, small_cases = 0, small_accepted = 0;
  auto run = [&](const Case& c) {
    ++cases;
    bool ran = false;
    const std::string error = run_case(algo, c, ++seed, ran);
    accepted += ran ? 1 : 0;
    if (c.nranks <= 8) {
      ++small_cases;
      small_accepted += ran ? 1 : 0;
    }
    if (!error.empty()) FAIL(describe_case(algo, c) << ": " << error);
  };

  // Shape sweep: rank counts x counts x in-place x roots x chunking, with a
  // rotating datatype/op so the sweep stays fast.
  int rotation = 0;
  for (int p : rank_counts) {
    for (size_t count : counts_for(p, p > 16)) {
      for (bool in_place : {false, true}) {
        if (in_place && !can_be_in_place(coll)) continue;
        std::vector<int> roots = {0};
        if (has_root(coll) && p > 1) roots = {0, p - 1, p / 2};
        for (int root : roots) {
          Case c;
          c.nranks = p;
          c.args.coll = coll;
          c.args.count = coll == Collective::Barrier ? 0 : count;
          c.args.dtype = kAllDatatypes[rotation % kNumDatatypes];
          c.args.op = is_reduction(coll) ? kAllOps[(rotation / 3) % kNumOps] : Op::Sum;
          c.args.root = root;
          c.args.in_place = in_place;
          // Tiny chunks on every other case: exercises multi-chunk messages.
          c.args.params.chunk_bytes = rotation % 2 ? 3 * datatype_size(c.args.dtype) : 0;
          c.mode = rotation % 5 == 0 ? SimNetwork::Mode::Eager : SimNetwork::Mode::Rendezvous;
          ++rotation;
          run(c);
        }
      }
    }
  }

  // Every datatype x op (reductions) or datatype (others) on a few shapes.
  for (int p : {1, 2, 3, 5, 8}) {
    for (Datatype dt : kAllDatatypes) {
      for (Op op : kAllOps) {
        if (!is_reduction(coll) && op != Op::Sum) continue;
        for (bool in_place : {false, true}) {
          if (in_place && !can_be_in_place(coll)) continue;
          Case c;
          c.nranks = p;
          c.args.coll = coll;
          c.args.count = coll == Collective::Barrier ? 0 : 37;
          c.args.dtype = dt;
          c.args.op = op;
          c.args.root = p - 1;
          c.args.in_place = in_place;
          run(c);
        }
      }
    }
  }

  // Far larger jobs with small vectors. At 1,000 ranks only the collectives
  // whose buffers and messages grow as P (not P^2: every rank's block to
  // every rank) and not through one node's segment (its flags grow as P^2):
  // those took 5-40 s each there and are covered at 255.
  const bool quadratic = per_block(coll) || uses_node_segment(algo);
  for (int p : {64, 100, 255, 1000}) {
    for (size_t count : {size_t{3}, static_cast<size_t>(p) + 5}) {
      if (p == 1000 && (quadratic || count > 3)) continue;
      Case c;
      c.nranks = p;
      c.args.coll = coll;
      c.args.count = coll == Collective::Barrier ? 0 : count;
      c.args.dtype = Datatype::Float32;
      c.args.op = Op::Sum;
      c.args.root = p / 3;
      run(c);
    }
  }
  INFO(accepted << " of " << cases << " cases accepted; " << small_accepted << " of "
                << small_cases << " on up to 8 ranks");
  // An algorithm that refuses (nearly) everything would pass untested. On
  // small jobs every algorithm takes most cases; on large ones the
  // shared-memory algorithms refuse what the small simulated segment cannot
  // hold.
  CHECK(small_accepted * 2 > small_cases);
  CHECK(accepted * 8 > cases);
}

// A program calls collectives in a row on one communicator. The
// shared-memory algorithms hand the segment on without a closing
// synchronisation (parities alternate across calls, shm_common.hpp), with
// other algorithms' messages in between. The deterministic sweep lets each
// rank run as far ahead into its next calls as it can, which is where a
// rank reusing slots its peers still read would corrupt a result.
//
// `small_rooted` makes every call a bcast or reduce that fits the flag
// lines: one-way, so a sender runs ahead until the lines it would reuse
// are still unread, and must wait there.
// `node_of_rank` (empty: one node): the job's nodes, each with its segment,
// where the node-aware algorithms that use it (*_shm) mix their one-way
// passes with the others' fully synchronised chunks.
std::string run_sequence(int p, uint64_t seed, bool threaded, bool small_rooted = false,
                         const std::vector<int>& node_of_rank = {}) {
  std::mt19937_64 rng(seed);
  std::vector<const algos::Algorithm*> pool;
  for (const algos::Algorithm& algo : algos::all_algorithms()) {
    if (algo.is_mpi()) continue;
    // The single-copy ones ("cma") synchronise through the segment's flags;
    // "*_shm" and "*_shm_*" (hierarchical_shm_overlap) move data through it.
    const bool through_segment = algo.name == "shm" || algo.name.ends_with("_shm") ||
                                 algo.name.find("_shm_") != std::string::npos ||
                                 algo.name == "cma";
    if (small_rooted ? through_segment && (algo.coll == Collective::Bcast ||
                                           algo.coll == Collective::Reduce)
                     : through_segment || algo.name == "ring" || algo.coll == Collective::Barrier)
      pool.push_back(&algo);
  }
  constexpr size_t kSharedBytes = 64 * 1024;  // slots of 4 KiB and more: streaming copies
  const std::vector<size_t> counts =
      small_rooted ? std::vector<size_t>{1, 2, 3, 6} : std::vector<size_t>{0, 1, 7, 33, 500, 3001};
  std::vector<PreparedCase> cases;
  while (cases.size() < (small_rooted ? 40u : 16u)) {
    const algos::Algorithm& algo = *pool[rng() % pool.size()];
    Case c;
    c.nranks = p;
    c.node_of_rank = node_of_rank;
    c.shared_bytes = kSharedBytes;
    c.args.coll = algo.coll;
    c.args.count = algo.coll == Collective::Barrier ? 0 : counts[rng() % counts.size()];
    c.args.dtype = kAllDatatypes[rng() % kNumDatatypes];
    c.args.op = is_reduction(algo.coll) ? kAllOps[rng() % kNumOps] : Op::Sum;
    c.args.root = static_cast<int>(rng() % static_cast<uint64_t>(p));
    c.args.in_place = can_be_in_place(algo.coll) && rng() % 2 == 0;
    // Small chunks: odd and even numbers of chunks per call.
    c.args.params.chunk_bytes = rng() % 2 ? 64 * (1 + rng() % 4) : 0;
    if (auto prepared = prepare_case(algo, c, seed * 100 + cases.size()))
      cases.push_back(std::move(*prepared));
  }
  std::vector<SimCall> calls;
  for (const PreparedCase& pc : cases) calls.push_back(pc.call);
  SimOptions options;
  options.threaded = threaded;
  options.node_of_rank = node_of_rank;
  options.shared_bytes = kSharedBytes;
  // Streaming stores, normal ones, or each rank's own choice.
  const std::optional<bool> stream_modes[] = {true, false, std::nullopt};
  options.shm_streaming = stream_modes[seed % 3];
  const std::vector<SimOutcome> got = run_sequence_in_sim(calls, options);
  if (!got.front().error.empty()) return got.front().error;
  for (size_t i = 0; i < cases.size(); ++i) {
    const CollArgs& a = cases[i].call.args.front();
    const std::string diff = compare_outputs(got[i], cases[i].want, a.dtype);
    if (!diff.empty()) return str("call ", i, " (", cases[i].call.algo->name, " ", describe(a), "): ", diff);
  }
  return "";
}

}  // namespace

// Two test cases, the reductions and the rest, so that meson runs the sweep's
// halves side by side (unit-algorithms, unit-algorithms-movement).
namespace {
void check_algorithms(bool reductions) {
  for (const algos::Algorithm& algo : algos::all_algorithms()) {
    if (algo.is_mpi() || is_reduction(algo.coll) != reductions) continue;
    DYNAMIC_SECTION(collective_name(algo.coll) << " " << algo.name) { check_algorithm(algo); }
  }
}
}  // namespace

TEST_CASE("every reduction algorithm matches the reference in the simulator", "[algorithms][sim]") {
  check_algorithms(true);
}

TEST_CASE("every data-movement algorithm matches the reference in the simulator",
          "[algorithms-movement][sim]") {
  check_algorithms(false);
}

// Ranks as concurrent threads over one shared segment, as processes on a
// node: under ThreadSanitizer (scripts/sanitize.sh) this finds data races in
// the engine, the shared-memory algorithms' flag protocol and the reductions.
namespace {

// Node layouts of a P-rank job spread over several nodes: blocks of 2 and
// of 3 ranks (the last node smaller when P does not divide), two nodes with
// ranks dealt round-robin (srun's cyclic distribution), one rank per node,
// and nodes of uneven size (2, 1, 2, 1, ...).
std::vector<std::vector<int>> node_layouts(int p) {
  std::vector<std::vector<int>> layouts(5, std::vector<int>(static_cast<size_t>(p)));
  int uneven_node = 0, uneven_left = 2;
  for (int r = 0; r < p; ++r) {
    layouts[0][r] = r / 2;
    layouts[1][r] = r / 3;
    layouts[2][r] = r % 2;
    layouts[3][r] = r;
    layouts[4][r] = uneven_node;
    if (--uneven_left == 0) uneven_left = ++uneven_node % 2 ? 1 : 2;
  }
  return layouts;
}

// Every algorithm on jobs of several nodes (the node-aware ones build on the
// layout; the flat ones must not care; the shared-memory ones refuse).
void check_algorithm_on_nodes(const algos::Algorithm& algo) {
  const Collective coll = algo.coll;
  uint64_t seed = 7;
  int rotation = 0;
  for (int p = 2; p <= 13; ++p) {
    for (const std::vector<int>& layout : node_layouts(p)) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, static_cast<size_t>(p) + 1, size_t{97}}) {
        Case c;
        c.nranks = p;
        c.node_of_rank = layout;
        c.args.coll = coll;
        c.args.count = coll == Collective::Barrier ? 0 : count;
        c.args.dtype = kAllDatatypes[rotation % kNumDatatypes];
        c.args.op = is_reduction(coll) ? kAllOps[(rotation / 3) % kNumOps] : Op::Sum;
        c.args.root = rotation % 3 == 0 ? 0 : p - 1 - rotation % p;
        c.args.in_place = can_be_in_place(coll) && rotation % 2 == 1;
        c.args.params.chunk_bytes = rotation % 4 == 1 ? 3 * datatype_size(c.args.dtype) : 0;
        c.mode = rotation % 5 == 0 ? SimNetwork::Mode::Eager : SimNetwork::Mode::Rendezvous;
        if (rotation % 7 == 3) c.shared_bytes = 0;  // no segment: messages inside the nodes too
        ++rotation;
        bool ran = false;
        const std::string error = run_case(algo, c, ++seed, ran);
        if (!error.empty()) FAIL(describe_case(algo, c) << ": " << error);
      }
    }
  }
}

}  // namespace

TEST_CASE("every algorithm matches the reference on jobs of several nodes", "[algorithms][sim]") {
  for (const algos::Algorithm& algo : algos::all_algorithms()) {
    if (algo.is_mpi()) continue;
    DYNAMIC_SECTION(collective_name(algo.coll) << " " << algo.name) { check_algorithm_on_nodes(algo); }
  }
}

TEST_CASE("node layouts of the multi-node sweep are what they say", "[algorithms]") {
  CHECK(node_layouts(7)[0] == std::vector<int>{0, 0, 1, 1, 2, 2, 3});
  CHECK(node_layouts(7)[1] == std::vector<int>{0, 0, 0, 1, 1, 1, 2});
  CHECK(node_layouts(5)[2] == std::vector<int>{0, 1, 0, 1, 0});
  CHECK(node_layouts(7)[4] == std::vector<int>{0, 0, 1, 2, 2, 3, 4});
}

TEST_CASE("every algorithm is right with ranks running concurrently", "[threads]") {
  uint64_t seed = 100;
  for (const algos::Algorithm& algo : algos::all_algorithms()) {
    if (algo.is_mpi()) continue;
    for (int p : {2, 3, 4, 5, 8}) {
      for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, size_t{20000}}) {
        for (bool in_place : {false, true}) {
          if (in_place && !can_be_in_place(algo.coll)) continue;
          Case c;
          c.nranks = p;
          c.threaded = true;
          c.args.coll = algo.coll;
          c.args.count = algo.coll == Collective::Barrier ? 0 : count;
          c.args.dtype = count % 2 ? Datatype::Int32 : Datatype::Float32;
          c.args.root = p - 1;
          c.args.in_place = in_place;
          c.args.params.chunk_bytes = count > 1000 ? 4096 : 0;
          bool ran = false;
          const std::string error = run_case(algo, c, ++seed, ran);
          if (!error.empty()) FAIL(describe_case(algo, c) << " threaded: " << error);
        }
      }
    }
  }
}

TEST_CASE("collectives in a row reuse the shared segment safely", "[algorithms][sim]") {
  for (int p : {2, 3, 4, 5, 8})
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const std::string error = run_sequence(p, seed, false);
      if (!error.empty()) FAIL("nranks=" << p << " seed=" << seed << ": " << error);
    }
}

TEST_CASE("collectives in a row reuse the shared segment safely on threads", "[threads]") {
  for (int p : {2, 3, 4, 5, 8})
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      const std::string error = run_sequence(p, seed, true);
      if (!error.empty()) FAIL("nranks=" << p << " seed=" << seed << ": " << error);
    }
}

TEST_CASE("collectives in a row reuse each node's segment safely in jobs across nodes",
          "[algorithms][sim]") {
  for (int p : {4, 5, 7})
    for (const std::vector<int>& layout : node_layouts(p))
      for (uint64_t seed = 1; seed <= 8; ++seed) {
        const std::string error = run_sequence(p, seed, false, false, layout);
        if (!error.empty()) FAIL("nranks=" << p << " seed=" << seed << ": " << error);
      }
}

TEST_CASE("collectives in a row reuse each node's segment safely across nodes on threads",
          "[threads]") {
  for (int p : {4, 5})
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const std::string error = run_sequence(p, seed, true, false, node_layouts(p)[0]);
      if (!error.empty()) FAIL("nranks=" << p << " seed=" << seed << ": " << error);
    }
}

TEST_CASE("small bcasts and reduces in a row reuse the flag lines safely", "[algorithms][sim]") {
  for (int p : {2, 3, 4, 5, 8})
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      const std::string error = run_sequence(p, seed, false, true);
      if (!error.empty()) FAIL("nranks=" << p << " seed=" << seed << ": " << error);
    }
}

TEST_CASE("small bcasts and reduces in a row reuse the flag lines safely on threads", "[threads]") {
  for (int p : {2, 3, 4, 5, 8})
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      const std::string error = run_sequence(p, seed, true, true);
      if (!error.empty()) FAIL("nranks=" << p << " seed=" << seed << ": " << error);
    }
}

// Independent jobs on different threads share nothing but tutti's global
// state (registry, reduction dispatch, CPU feature detection).
TEST_CASE("independent simulated jobs run side by side on threads", "[threads]") {
  const auto algos_list = algos::all_algorithms();
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < errors.size(); ++t)
    threads.emplace_back([&, t] {
      uint64_t seed = 1000 * (t + 1);
      for (size_t i = t; i < algos_list.size(); i += 2) {
        const algos::Algorithm& algo = algos_list[i];
        if (algo.is_mpi()) continue;
        Case c;
        c.nranks = 3 + static_cast<int>(t);
        c.args.coll = algo.coll;
        c.args.count = algo.coll == Collective::Barrier ? 0 : 513;
        c.args.dtype = kAllDatatypes[(i + t) % kNumDatatypes];
        c.args.op = is_reduction(algo.coll) ? kAllOps[i % kNumOps] : Op::Sum;
        bool ran = false;
        const std::string error = run_case(algo, c, ++seed, ran);
        if (!error.empty() && errors[t].empty()) errors[t] = describe_case(algo, c) + ": " + error;
      }
    });
  for (std::thread& th : threads) th.join();
  for (const std::string& e : errors) CHECK(e == "");
}

TEST_CASE("every collective has an mpi fallback and unique names", "[algorithms]") {
  for (Collective c : kAllCollectives) {
    const algos::Algorithm* mpi = algos::find_algorithm(c, "mpi");
    REQUIRE(mpi != nullptr);
    CHECK(mpi->is_mpi());
    const auto list = algos::algorithms_for(c);
    for (size_t i = 0; i < list.size(); ++i)
      for (size_t j = i + 1; j < list.size(); ++j) CHECK(list[i]->name != list[j]->name);
  }
}

}  // namespace tutti::testing

namespace tutti::testing {

// The algorithms with a radix (params.radix): every radix, including ones
// that are not powers of two and larger than the rank count, on rank counts
// that are and are not powers of the radix, with roots other than 0.
// alltoallv "shm" and alltoall "lines" (algos/flag_exchange.hpp) send each
// block its own way: in one signal, in several (up to 4 a round, over
// several rounds), or, larger, read in place by its receiver (or as a
// message where ranks cannot read each other). Counts around `base`
// elements of 8 bytes put alltoallv's blocks of one call in all three
// (carry_bytes is 384 on these rank counts: 0-47 elements one signal,
// -384 several, beyond read or a message); alltoall's go one way a call.
// On 2 ranks blocks of 0.5-3.2 MB also go through the slots in chunks
// (kChunkedBlockFrom), a remainder last, or one way chunked and the other
// read.
TEST_CASE("flag exchange: blocks in one signal, in several rounds, read or as messages", "[algorithms][sim]") {
  uint64_t seed = 7000;
  for (Collective coll : {Collective::Alltoallv, Collective::Alltoall}) {
    const algos::Algorithm* algo =
        algos::find_algorithm(coll, coll == Collective::Alltoallv ? "shm" : "lines");
    REQUIRE(algo);
    const std::vector<size_t> bases = coll == Collective::Alltoallv
                                          ? std::vector<size_t>{20, 200, 400, 200000}
                                          : std::vector<size_t>{1, 47, 48, 100, 384, 385, 1000};
    for (int p : {2, 3, 4, 5, 8}) {
      for (size_t base : bases) {
        if (base > 1000 && p != 2) continue;
        for (bool in_place : {false, true}) {
          for (auto mode : {SimNetwork::Mode::Eager, SimNetwork::Mode::Rendezvous}) {
            for (bool reads : {true, false}) {
              Case c;
              c.nranks = p;
              c.peer_reads = reads;
              c.mode = mode;
              c.args.coll = coll;
              c.args.count = base;
              c.args.dtype = Datatype::Float64;
              c.args.in_place = in_place;
              bool ran = false;
              const std::string error = run_case(*algo, c, ++seed, ran);
              CHECK(ran);
              if (!error.empty()) FAIL(describe_case(*algo, c) << ": " << error);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("radix algorithms are right at every radix", "[algorithms][sim]") {
  const algos::Algorithm* algos_with_radix[] = {
      algos::find_algorithm(Collective::Allreduce, "recursive_multiplying"),
      algos::find_algorithm(Collective::Bcast, "knomial"),
      algos::find_algorithm(Collective::Reduce, "knomial")};
  uint64_t seed = 1;
  for (const algos::Algorithm* algo : algos_with_radix) {
    REQUIRE(algo);
    for (int radix : {2, 3, 4, 8, 16, 64}) {
      for (int p : {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 32, 64}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{1031}}) {
          for (bool in_place : {false, true}) {
            if (in_place && !can_be_in_place(algo->coll)) continue;
            Case c;
            c.nranks = p;
            c.args.coll = algo->coll;
            c.args.count = count;
            c.args.dtype = (seed % 2) ? Datatype::Float32 : Datatype::Int64;
            c.args.op = kAllOps[seed % kNumOps];
            c.args.root = static_cast<int>(seed % static_cast<uint64_t>(p));
            c.args.in_place = in_place;
            c.args.params.radix = radix;
            c.args.params.chunk_bytes = seed % 3 == 0 ? 64 : 0;
            bool ran = false;
            const std::string error = run_case(*algo, c, seed++, ran);
            INFO(collective_name(algo->coll) << " " << algo->name << " radix " << radix << ", "
                                             << p << " ranks, " << describe(c.args));
            CHECK(ran);
            CHECK(error.empty());
          }
        }
      }
    }
  }
  // reduce knomial beyond its landing scratch (4 MiB): children one at a time.
  const algos::Algorithm* reduce = algos_with_radix[2];
  for (int p : {3, 5, 9}) {
    Case c;
    c.nranks = p;
    c.args.coll = Collective::Reduce;
    c.args.count = (size_t{3} << 20) / 4 + 1;  // 3 MiB + 4 B of float32
    c.args.dtype = Datatype::Float32;
    c.args.op = Op::Sum;
    c.args.root = p - 1;
    bool ran = false;
    const std::string error = run_case(*reduce, c, seed++, ran);
    INFO("reduce knomial, " << p << " ranks, " << describe(c.args));
    CHECK(ran);
    CHECK(error.empty());
  }
}

}  // namespace tutti::testing

#include "algos/across_nodes.hpp"

namespace tutti::testing {

// The phase between nodes of the node-aware allreduces takes Rabenseifner's
// recursive halving beyond the 4 nodes measured, where its terms are the
// lowest (the cases of "on jobs of several nodes" above are too small for
// it): right on 8, 12 (a fold) and 16 nodes of 1-2 ranks, each lane's
// slice of a size where the halving runs, in place and not, every op.
TEST_CASE("node-aware allreduces are right where recursive halving runs between nodes",
          "[algorithms][sim]") {
  using algos::AcrossNodes;
  for (int nodes : {2, 3, 4})
    for (size_t bytes : {size_t{8}, size_t{64} << 10, size_t{1} << 20, size_t{64} << 20})
      CHECK(algos::choose_across_nodes(nodes, bytes) != AcrossNodes::Halving);
  CHECK(algos::choose_across_nodes(8, 8) == AcrossNodes::Doubling);
  CHECK(algos::choose_across_nodes(2048, size_t{8} << 20) == AcrossNodes::Halving);
  // Every lane (local rank) carries one slice of this many bytes between nodes.
  constexpr size_t kLaneCount = (size_t{128} << 10) / 8 + 3;  // float64, uneven blocks
  uint64_t seed = 11;
  for (const char* name : {"hierarchical", "hierarchical_shm", "leader", "leader_shm"}) {
    const algos::Algorithm* algo = algos::find_algorithm(Collective::Allreduce, name);
    REQUIRE(algo);
    const bool lanes = std::string(name).starts_with("hierarchical");
    for (int nodes : {8, 12, 16}) {
      REQUIRE(algos::choose_across_nodes(nodes, kLaneCount * 8) == AcrossNodes::Halving);
      for (int per_node : {1, 2}) {
        Case c;
        c.nranks = nodes * per_node;
        for (int r = 0; r < c.nranks; ++r) c.node_of_rank.push_back(r / per_node);
        c.shared_bytes = size_t{16} << 20;  // a slot holds the whole vector: one chunk
        c.args.coll = Collective::Allreduce;
        c.args.count = lanes ? kLaneCount * static_cast<size_t>(per_node) : kLaneCount;
        c.args.dtype = Datatype::Float64;
        c.args.op = kAllOps[seed % kNumOps];
        c.args.in_place = seed % 2 == 0;
        bool ran = false;
        const std::string error = run_case(*algo, c, ++seed, ran);
        INFO(describe_case(*algo, c));
        CHECK(ran);
        CHECK(error.empty());
      }
    }
  }
}

// alltoallv hierarchical_shm sends blocks for another node of 128 KiB and
// more straight to their rank and the smaller ones through the lanes
// (kDirectBlockBytes): blocks of 0-312 KiB mix both in one call, and a
// pair's pack and direct block cross together.
TEST_CASE("alltoallv hierarchical_shm sends large blocks direct and small ones through lanes",
          "[algorithms][sim]") {
  const algos::Algorithm* algo = algos::find_algorithm(Collective::Alltoallv, "hierarchical_shm");
  REQUIRE(algo != nullptr);
  uint64_t seed = 11;
  int rotation = 0, ran_cases = 0;
  for (int p = 2; p <= 7; ++p)
    for (const std::vector<int>& layout : node_layouts(p)) {
      Case c;
      c.nranks = p;
      c.node_of_rank = layout;
      c.args.coll = Collective::Alltoallv;
      c.args.count = 20000;  // base: blocks of 0 to 2 x 20000 elements
      c.args.dtype = rotation % 2 ? Datatype::Float64 : Datatype::Float32;
      c.args.in_place = rotation % 3 == 1;
      c.shared_bytes = size_t{1} << 20;
      c.mode = rotation % 4 == 0 ? SimNetwork::Mode::Eager : SimNetwork::Mode::Rendezvous;
      ++rotation;
      bool ran = false;
      const std::string error = run_case(*algo, c, ++seed, ran);
      if (!error.empty()) FAIL(describe_case(*algo, c) << ": " << error);
      ran_cases += ran ? 1 : 0;
    }
  CHECK(ran_cases > 20);
}

}  // namespace tutti::testing
