// Tuning tables in real jobs: communicators created with TUTTI_TUNE and a
// tuning file (set in every rank's environment before tutti_comm_create,
// which reads it) run the algorithms the rules name, fall back to the
// built-in defaults where no rule matches, give way to TUTTI_ALGO_<COLL>,
// count the calls that ran the MPI library's collective, and report invalid
// tables on every rank. Ranks given different tables: tests/tuning. Ranks
// given different TUTTI_SHM_STREAM settings still meet in the segment.
// TUTTI_CMA=0 turns the single-copy algorithms off; the probe of their speed
// at creation (or TUTTI_READS) decides the reads=fast rules, alike on every
// rank. A bad TUTTI_CUDA_IPC on any rank fails creation on every rank (CUDA
// builds).
#include <catch2/catch.hpp>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "api/handles.hpp"
#include "base/status.hpp"
#include "mpi_harness.hpp"
#include "node/peer_memory.hpp"
#include "node/read_probe.hpp"
#include "node/shared_segment.hpp"
#include "tuning/table.hpp"
#include "tutti_config.h"

namespace tutti::testing {
namespace {

// Environment variables for one test, restored after.
class Env {
 public:
  void set(const char* name, const std::optional<std::string>& value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~Env() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
      else unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A communicator over MPI_COMM_WORLD made with the current environment.
struct Comm {
  tutti_comm_t comm = nullptr;
  int status = TUTTI_SUCCESS;
  std::string error;
  Comm() {
    status = tutti_comm_create(MPI_COMM_WORLD, &comm);
    if (status != TUTTI_SUCCESS) error = tutti_last_error();
  }
  ~Comm() {
    if (comm) tutti_comm_destroy(comm);
  }
};

// This rank's own copy of a tuning file (paths differ between ranks, as
// they may between nodes; the contents are what must agree).
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text)
      : path(str("/tmp/tutti-mpi-tuning-", getpid(), ".toml")) {
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

// Runs an allreduce of `count` floats on `comm`; returns the algorithm that
// ran, or "" if the call failed or the result was wrong (on any rank).
std::string allreduce_algorithm(tutti_comm_t comm, size_t count) {
  const int p = world_size();
  std::vector<float> in(count, 1.0f), out(count, 0.0f);
  const int st = tutti_allreduce(in.data(), out.data(), count, TUTTI_FLOAT32, TUTTI_SUM, comm);
  bool ok = st == TUTTI_SUCCESS;
  for (float v : out) ok = ok && v == static_cast<float>(p);
  const std::string ran = tutti_comm_last_algorithm(comm);
  return all_ranks(ok) ? ran : "";
}

// Whether the ranks of `comm` outnumber the CPUs they may run on (the union
// of their affinity masks), as tutti decides it for one node.
bool ranks_outnumber_cpus(MPI_Comm comm) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  REQUIRE(sched_getaffinity(0, sizeof cpus, &cpus) == 0);
  REQUIRE(MPI_Allreduce(MPI_IN_PLACE, &cpus, static_cast<int>(sizeof cpus), MPI_BYTE, MPI_BOR,
                        comm) == MPI_SUCCESS);
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  return ranks > CPU_COUNT(&cpus);
}
bool ranks_share_cores() { return ranks_outnumber_cpus(MPI_COMM_WORLD); }

// What the built-in defaults choose for a float32 call of `bytes`.
std::string builtin_choice(Collective c, uint64_t bytes) {
  const int p = world_size();
  const CallShape shape{c, bytes, p, 1, MemoryType::Host, Datatype::Float32, ranks_share_cores()};
  const TuningRule* r = builtin_tuning().match(shape);
  return r ? r->algorithm : "mpi";
}

// The ranks of MPI_COMM_WORLD on this rank's node (the caller frees it).
MPI_Comm this_node() {
  MPI_Comm node = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
          MPI_SUCCESS);
  return node;
}

tutti_comm_stats_t stats_of(tutti_comm_t comm) {
  tutti_comm_stats_t s{};
  REQUIRE(tutti_comm_stats(comm, &s) == TUTTI_SUCCESS);
  return s;
}

}  // namespace

TEST_CASE("TUTTI_TUNE rules are obeyed by real calls; defaults apply elsewhere", "[tuning]") {
  Env env;
  env.set("TUTTI_TUNING_FILE", std::nullopt);
  env.set("TUTTI_ALGO_ALLREDUCE", std::nullopt);
  env.set("TUTTI_TUNE", "allreduce:0-4K:tree,4K-64K:mpi,64K-1M:ring@chunk_bytes=16K");
  // builtin_choice matches as if reads were fast (nothing probed).
  env.set("TUTTI_READS", "fast");
  Comm c;
  REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
  const tutti_comm_stats_t before = stats_of(c.comm);
  CHECK(allreduce_algorithm(c.comm, 100) == "tree");         // 400 B
  CHECK(allreduce_algorithm(c.comm, 4096) == "mpi");         // 16 KiB
  CHECK(allreduce_algorithm(c.comm, 100000) == "ring");      // 400 KB, chunked by 16K
  CHECK(allreduce_algorithm(c.comm, 1 << 19) ==               // 2 MiB: no rule, the default
        builtin_choice(Collective::Allreduce, 2 << 20));
  CHECK(allreduce_algorithm(c.comm, 4096) == "mpi");         // the cached plan: counted again
  const tutti_comm_stats_t after = stats_of(c.comm);
  CHECK(after.collectives - before.collectives == 5);
  CHECK(after.mpi_fallbacks - before.mpi_fallbacks == 2);
  CHECK(after.refused_fallbacks == before.refused_fallbacks);

  // No bcast rule: the built-in default.
  std::vector<int32_t> buf(16, world_rank() == 0 ? 7 : 0);
  REQUIRE(tutti_bcast(buf.data(), buf.size(), TUTTI_INT32, 0, c.comm) == TUTTI_SUCCESS);
  CHECK(std::string(tutti_comm_last_algorithm(c.comm)) == builtin_choice(Collective::Bcast, 64));
  CHECK(all_ranks(buf[15] == 7));
}

TEST_CASE("TUTTI_ALGO_<COLL> wins over TUTTI_TUNE, which wins over the file", "[tuning]") {
  const TempFile file(R"([tutti]
cluster = "mpi-tests"

[[rule]]
collective = "allreduce"
algorithm = "recursive_halving"

[[rule]]
collective = "barrier"
algorithm = "mpi"
)");
  Env env;
  env.set("TUTTI_TUNING_FILE", file.path);
  env.set("TUTTI_TUNE", "allreduce:0-1K:tree");
  env.set("TUTTI_ALGO_ALLREDUCE", std::nullopt);
  {
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    CHECK(allreduce_algorithm(c.comm, 16) == "tree");                 // TUTTI_TUNE
    CHECK(allreduce_algorithm(c.comm, 1024) == "recursive_halving");  // the file
    REQUIRE(tutti_barrier(c.comm) == TUTTI_SUCCESS);
    CHECK(std::string(tutti_comm_last_algorithm(c.comm)) == "mpi");  // the file
  }
  env.set("TUTTI_ALGO_ALLREDUCE", "ring");
  {
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    CHECK(allreduce_algorithm(c.comm, 16) == "ring");
    CHECK(allreduce_algorithm(c.comm, 1024) == "ring");
  }
}

TEST_CASE("sections of the file apply to the job shapes they name", "[tuning]") {
  const int p = world_size();
  const TempFile file(str(R"([[section]]
name = "this job"
ranks = ")", p, R"("
nodes = "1-"
[[section.rule]]
collective = "allreduce"
algorithm = "tree"

[[section]]
name = "another job"
ranks = ")", p + 1, R"("
[[section.rule]]
collective = "allreduce"
bytes = "0-"
algorithm = "mpi"
[[section.rule]]
collective = "barrier"
algorithm = "mpi"
)"));
  Env env;
  env.set("TUTTI_TUNING_FILE", file.path);
  env.set("TUTTI_TUNE", std::nullopt);
  env.set("TUTTI_ALGO_ALLREDUCE", std::nullopt);
  env.set("TUTTI_ALGO_BARRIER", std::nullopt);
  Comm c;
  REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
  CHECK(allreduce_algorithm(c.comm, 16) == "tree");
  CHECK(allreduce_algorithm(c.comm, 1 << 20) == "tree");
  REQUIRE(tutti_barrier(c.comm) == TUTTI_SUCCESS);
  CHECK(std::string(tutti_comm_last_algorithm(c.comm)) == builtin_choice(Collective::Barrier, 0));
}

TEST_CASE("an invalid table fails tutti_comm_create on every rank, unless not strict", "[tuning]") {
  const TempFile file(R"([[rule]]
collective = "allreduce"
algoritm = "ring"

[[rule]]
collective = "bcast"
algorithm = "ring"
)");
  Env env;
  env.set("TUTTI_TUNING_FILE", file.path);
  env.set("TUTTI_TUNE", std::nullopt);
  env.set("TUTTI_TUNING_STRICT", std::nullopt);
  env.set("TUTTI_ALGO_BCAST", std::nullopt);
  {
    Comm c;
    CHECK(all_ranks(c.status == TUTTI_ERR_INVALID_ARGUMENT));
    // Every rank reports the first failing rank's words (its own file's path).
    CHECK(all_ranks(c.error.find(".toml:3: unknown key 'algoritm'") != std::string::npos));
    CHECK(all_ranks(c.error.find("cannot load the tuning table (rank") == 0));
  }
  env.set("TUTTI_TUNING_STRICT", "0");
  {
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    std::vector<int32_t> buf(16, 3);
    REQUIRE(tutti_bcast(buf.data(), buf.size(), TUTTI_INT32, 0, c.comm) == TUTTI_SUCCESS);
    CHECK(std::string(tutti_comm_last_algorithm(c.comm)) == "ring");  // the valid rule
  }
  env.set("TUTTI_TUNING_FILE", std::nullopt);
  env.set("TUTTI_TUNE", "allreduce:0-:no_such_algorithm");
  env.set("TUTTI_TUNING_STRICT", std::nullopt);
  {
    Comm c;
    CHECK(all_ranks(c.status == TUTTI_ERR_INVALID_ARGUMENT));
    CHECK(all_ranks(c.error.find("unknown algorithm 'no_such_algorithm'") != std::string::npos));
  }
}

#if TUTTI_HAVE_CUDA
// Every rank votes on CUDA IPC at creation (even without a GPU, so that the
// vote is the same collective everywhere); a bad value must not leave the
// other ranks waiting.
TEST_CASE("a bad TUTTI_CUDA_IPC on any rank fails tutti_comm_create on every rank", "[tuning]") {
  Env env;
  env.set("TUTTI_CUDA_IPC", world_rank() == world_size() - 1 ? "maybe" : "1");
  {
    Comm c;
    CHECK(all_ranks(c.status == TUTTI_ERR_INVALID_ARGUMENT));
    const bool mine = world_rank() == world_size() - 1;
    CHECK(c.error.find(mine ? "TUTTI_CUDA_IPC='maybe': expected 0 or 1"
                            : "TUTTI_CUDA_IPC on another rank is not 0 or 1") != std::string::npos);
  }
  for (const char* fine : {"0", "1"}) {
    env.set("TUTTI_CUDA_IPC", fine);
    Comm c;
    CHECK(all_ranks(c.status == TUTTI_SUCCESS));
  }
}
#endif

TEST_CASE("ranks with different TUTTI_SHM_STREAM settings still meet in the segment", "[tuning]") {
  // Ranks that probe (node/slot_writes.hpp) write some calls' slots the
  // other way from ranks with a fixed setting; every call's slots must still
  // sit in the same place on all of them (SharedPort::take_slide).
  static const char* const kSettings[] = {"1", "auto", "0"};
  Env env;
  env.set("TUTTI_SHM_STREAM", kSettings[world_rank() % 3]);
  env.set("TUTTI_ALGO_ALLGATHER", "shm");
  env.set("TUTTI_TUNE", std::nullopt);
  env.set("TUTTI_TUNING_FILE", std::nullopt);
  Comm c;
  REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
  const int p = world_size();
  // Sizes that stay long enough for probes (of copies of 16 KiB and more),
  // then change, in one and several chunks.
  const size_t counts[] = {8192, 8192, 8192, 8192, 8192, 100, 100, 100, 100, 300000, 300000,
                           300000, 300000, 4096, 8192, 4096, 8192, 4096, 8192, 4096};
  bool ok = true;
  for (int call = 0; call < 100; ++call) {
    const size_t count = counts[call % std::size(counts)];
    auto value = [&](int rank, size_t i) { return static_cast<int32_t>(call * 7919 + rank * 131 + i); };
    std::vector<int32_t> in(count), out(count * p, -1);
    for (size_t i = 0; i < count; ++i) in[i] = value(world_rank(), i);
    ok = ok && tutti_allgather(in.data(), out.data(), count, TUTTI_INT32, c.comm) == TUTTI_SUCCESS;
    for (int q = 0; q < p; ++q)
      for (size_t i = 0; i < count; ++i) ok = ok && out[q * count + i] == value(q, i);
    ok = ok && (p == 1 || std::string(tutti_comm_last_algorithm(c.comm)) == "shm");
  }
  CHECK(all_ranks(ok));
}

// A segment's signal groups (how far a rank may run ahead of a reader)
// must be alike on every rank of a node. Ranks that yield when idle (the
// launcher's hint that they share cores) get 16, as oversubscribed nodes do;
// one such rank is enough, and every rank lays its segment out for it.
TEST_CASE("ranks told to yield get the shared-cores segment, on every rank of the node", "[tuning]") {
  // Whether some node has more ranks than CPUs, as tutti decides it.
  MPI_Comm node = this_node();
  int node_ranks = 1, node_rank = 0;
  MPI_Comm_size(node, &node_ranks);
  MPI_Comm_rank(node, &node_rank);
  int oversubscribed = ranks_outnumber_cpus(node) ? 1 : 0;
  MPI_Comm_free(&node);
  REQUIRE(MPI_Allreduce(MPI_IN_PLACE, &oversubscribed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) ==
          MPI_SUCCESS);
  const bool wide = node_ranks <= SharedSegment::kWideCarryMaxRanks;
  const int own = !wide ? 2 : oversubscribed ? SharedSegment::kSharedCoresSignalGroups
                                             : SharedSegment::kWideSignalGroups;
  const int shared = wide ? SharedSegment::kSharedCoresSignalGroups : 2;
  const int p = world_size();
  // Which ranks yield: none, all, only the node's first rank.
  for (int setting = 0; setting < 3; ++setting) {
    const bool yields = setting == 1 || (setting == 2 && node_rank == 0);
    Env env;
    env.set("OMPI_MCA_mpi_yield_when_idle", yields ? "1" : "0");
    env.set("TUTTI_TUNE", std::nullopt);
    env.set("TUTTI_TUNING_FILE", std::nullopt);
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    const int want = node_ranks < 2 ? 0 : setting == 0 ? own : shared;
    CHECK(all_ranks(c.comm->impl->signal_groups() == want));
    // More one-way calls than any layout has groups: a sender that wrapped
    // round a reader's lines would show as a wrong value or a timeout.
    bool ok = true;
    for (int call = 0; call < 40; ++call) {
      const int root = call % p;
      int32_t v[3] = {0, 0, 0};
      if (world_rank() == root)
        for (int i = 0; i < 3; ++i) v[i] = call * 100 + root * 10 + i;
      ok = ok && tutti_bcast(v, 3, TUTTI_INT32, root, c.comm) == TUTTI_SUCCESS;
      for (int i = 0; i < 3; ++i) ok = ok && v[i] == call * 100 + root * 10 + i;
    }
    CHECK(all_ranks(ok));
  }
}

// The single-copy algorithms read peers' memory only where the probe at
// creation found the kernel allows it, and TUTTI_CMA=0 turns them off: then
// the built-in rule that names cma gives way to the shared segment's, and a
// forced cma refuses; results stay right either way.
TEST_CASE("TUTTI_CMA turns the single-copy algorithms on and off", "[tuning]") {
  const int node_ranks = ranks_on_this_node();
  const int p = world_size();
  if (p < 2 || !all_ranks(node_ranks == p)) {
    SUCCEED("cma needs one node of several ranks: it refuses here");
    return;
  }
  Env env;
  env.set("TUTTI_ALGO_ALLGATHER", std::nullopt);
  env.set("TUTTI_TUNE", std::nullopt);
  env.set("TUTTI_TUNING_FILE", std::nullopt);
  // 128 KiB per rank: the built-in rules pick cma on every rank count
  // where reads are fast (on 2 ranks where they are slow: the segment),
  // except where 3 ranks or more share cores (the segment).
  env.set("TUTTI_READS", "fast");
  const bool cma_by_default = p == 2 || !ranks_share_cores();
  const size_t count = 32768;
  auto allgather_runs = [&](tutti_comm_t comm) {
    std::vector<int32_t> in(count), out(count * p, -1);
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<int32_t>(world_rank() * 100003 + i);
    bool ok = tutti_allgather(in.data(), out.data(), count, TUTTI_INT32, comm) == TUTTI_SUCCESS;
    for (int q = 0; q < p; ++q)
      for (size_t i = 0; i < count; ++i) ok = ok && out[q * count + i] == static_cast<int32_t>(q * 100003 + i);
    REQUIRE(all_ranks(ok));
    return std::string(tutti_comm_last_algorithm(comm));
  };
  {
    env.set("TUTTI_CMA", std::nullopt);
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    CHECK(allgather_runs(c.comm) == (cma_by_default ? "cma" : "shm"));
    REQUIRE(tutti_comm_force_algorithm(c.comm, "allgather", "cma") == TUTTI_SUCCESS);
    CHECK(allgather_runs(c.comm) == "cma");
  }
  {
    env.set("TUTTI_CMA", "0");
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    CHECK(allgather_runs(c.comm) == "shm");
    const tutti_comm_stats_t before = stats_of(c.comm);
    REQUIRE(tutti_comm_force_algorithm(c.comm, "allgather", "cma") == TUTTI_SUCCESS);
    CHECK(allgather_runs(c.comm) != "cma");
    CHECK(stats_of(c.comm).refused_fallbacks == before.refused_fallbacks + 1);
  }
}

// The probe itself: ranks 0 and 1 of a node time a 64 KiB block moved both
// ways; every rank gets the same two positive medians.
TEST_CASE("the peer-read probe times both ways and tells every rank", "[tuning]") {
  MPI_Comm node = this_node();
  int node_ranks = 0;
  MPI_Comm_size(node, &node_ranks);
  if (!all_ranks(node_ranks >= 2) || !tutti::probe_peer_reads(node, true)) {
    MPI_Comm_free(&node);
    SUCCEED("the probe needs two ranks of one node that may read each other");
    return;
  }
  int rank = 0;
  MPI_Comm_rank(node, &rank);
  void* mine = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  REQUIRE(MPI_Win_allocate_shared(rank == 0 ? kReadProbeAreaBytes : 0, 1, MPI_INFO_NULL, node,
                                  &mine, &win) == MPI_SUCCESS);
  MPI_Aint bytes = 0;
  int unit = 0;
  void* area = nullptr;
  REQUIRE(MPI_Win_shared_query(win, 0, &bytes, &unit, &area) == MPI_SUCCESS);
  const std::optional<ReadTimes> t = time_peer_reads(node, static_cast<char*>(area), 60);
  REQUIRE(t);
  CHECK(t->read_us > 0);
  CHECK(t->segment_us > 0);
  double mine_and_negated[4] = {t->read_us, t->segment_us, -t->read_us, -t->segment_us};
  REQUIRE(MPI_Allreduce(MPI_IN_PLACE, mine_and_negated, 4, MPI_DOUBLE, MPI_MAX, node) ==
          MPI_SUCCESS);
  CHECK(mine_and_negated[0] == -mine_and_negated[2]);  // the same on every rank
  CHECK(mine_and_negated[1] == -mine_and_negated[3]);
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
}

// 2 ranks, allreduce of 64 KiB: the reads=fast rule names cma. TUTTI_READS
// decides it; with auto the probe does, alike on every rank; ranks whose
// settings differ are settled by the probe too; a bad value fails creation.
TEST_CASE("TUTTI_READS and the probe decide the reads=fast rules on every rank", "[tuning]") {
  const int node_ranks = ranks_on_this_node();
  Env env;
  env.set("TUTTI_ALGO_ALLREDUCE", std::nullopt);
  env.set("TUTTI_TUNE", std::nullopt);
  env.set("TUTTI_TUNING_FILE", std::nullopt);
  env.set("TUTTI_CMA", std::nullopt);
  const size_t count = 16384;  // 64 KiB of int32
  auto allreduce_runs = [&](tutti_comm_t comm) {
    // Rank r contributes i * 7 + r at element i: the sum is P(i * 7) + P(P-1)/2.
    const int p = world_size();
    std::vector<int32_t> in(count), out(count, -1);
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<int32_t>(i * 7) + world_rank();
    bool ok = tutti_allreduce(in.data(), out.data(), count, TUTTI_INT32, TUTTI_SUM, comm) ==
              TUTTI_SUCCESS;
    for (size_t i = 0; i < count; ++i)
      ok = ok && out[i] == static_cast<int32_t>(i * 7) * p + p * (p - 1) / 2;
    REQUIRE(all_ranks(ok));
    return std::string(tutti_comm_last_algorithm(comm));
  };
  // Whether every rank ran `algo` or every rank ran something else.
  auto alike = [](const std::string& ran, const std::string& algo) {
    const bool mine = ran == algo;
    return all_ranks(mine) || all_ranks(!mine);
  };
  const bool two_on_one_node = world_size() == 2 && all_ranks(node_ranks == 2);
  for (const char* setting : {"fast", "slow"}) {
    env.set("TUTTI_READS", setting);
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    const std::string ran = allreduce_runs(c.comm);
    INFO("TUTTI_READS=" << setting << ": " << ran);
    if (two_on_one_node) CHECK(ran == (std::string(setting) == "fast" ? "cma" : "shm"));
    CHECK(alike(ran, "cma"));
  }
  {
    env.set("TUTTI_READS", world_rank() % 2 ? "slow" : "fast");
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    CHECK(alike(allreduce_runs(c.comm), "cma"));
  }
  {
    env.set("TUTTI_READS", std::nullopt);
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    const std::string ran = allreduce_runs(c.comm);
    CHECK(alike(ran, "cma"));
    if (two_on_one_node) CHECK((ran == "cma" || ran == "shm"));
  }
  {
    env.set("TUTTI_READS", "sometimes");
    Comm c;
    CHECK(all_ranks(c.status == TUTTI_ERR_INVALID_ARGUMENT));
    CHECK(c.error.find("TUTTI_READS='sometimes': expected auto, fast or slow") != std::string::npos);
  }
}

// TUTTI_FOLLOW_STATE (api/state_choice.hpp): 2 ranks' allgather from 1 MiB
// and alltoall from 512 KiB probe the segment and cma in rounds of calls
// (the barriers before them are internal, uncounted) and then run what
// rank 0 proposed, on every rank alike. "alternate" makes every agreement
// switch, so that both variants run between the probes.
TEST_CASE("TUTTI_FOLLOW_STATE probes both ways, and every rank runs the agreed one",
          "[tuning]") {
  const int p = world_size();
  if (p != 2 || !all_ranks(ranks_on_this_node() == 2)) {
    SUCCEED("the built-in rules with an alternative are 2 ranks' on one node");
    return;
  }
  Env env;
  for (const char* name : {"TUTTI_ALGO_ALLGATHER", "TUTTI_ALGO_ALLTOALL", "TUTTI_TUNE",
                           "TUTTI_TUNING_FILE", "TUTTI_CMA"})
    env.set(name, std::nullopt);
  const size_t count = 262144;  // 1 MiB of int32 per block
  // Call `i` of `coll`: the result checked on every rank; the algorithm
  // that ran, the same on every rank.
  auto run = [&](tutti_comm_t comm, Collective coll, int i) {
    const int me = world_rank();
    std::vector<int32_t> in(count * (coll == Collective::Alltoall ? p : 1)), out(count * p, -1);
    for (size_t k = 0; k < in.size(); ++k) in[k] = static_cast<int32_t>(me * 1000003 + i * 7 + k);
    const int st = coll == Collective::Alltoall
                       ? tutti_alltoall(in.data(), out.data(), count, TUTTI_INT32, comm)
                       : tutti_allgather(in.data(), out.data(), count, TUTTI_INT32, comm);
    bool ok = st == TUTTI_SUCCESS;
    for (int q = 0; q < p; ++q) {
      // From rank q: its block (allgather) or its block for this rank (alltoall).
      const size_t from = coll == Collective::Alltoall ? me * count : 0;
      for (size_t k = 0; k < count; ++k)
        ok = ok && out[q * count + k] == static_cast<int32_t>(q * 1000003 + i * 7 + from + k);
    }
    REQUIRE(all_ranks(ok));
    const std::string ran = tutti_comm_last_algorithm(comm);
    const bool cma = ran == "cma";
    REQUIRE((ran == "cma" || ran == "shm"));
    REQUIRE((all_ranks(cma) || all_ranks(!cma)));
    return ran;
  };
  for (const char* mode : {"1", "alternate"}) {
    env.set("TUTTI_FOLLOW_STATE", mode);
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    for (Collective coll : {Collective::Allgather, Collective::Alltoall}) {
      INFO("TUTTI_FOLLOW_STATE=" << mode << ", " << collective_name(coll));
      const tutti_comm_stats_t before = stats_of(c.comm);
      std::vector<std::string> ran;
      for (int i = 1; i <= 50; ++i) ran.push_back(run(c.comm, coll, i));
      // Four warm-up calls, then probe rounds at calls 5-8, 9-12 and
      // 44-47, the segment twice, then cma twice.
      for (int i : {1, 2, 3, 4, 5, 6, 9, 10, 44, 45}) CHECK(ran[i - 1] == "shm");
      for (int i : {7, 8, 11, 12, 46, 47}) CHECK(ran[i - 1] == "cma");
      if (std::string(mode) == "alternate") {
        // Agreements at calls 9 (to cma), 13 (back to shm) and 48 (cma).
        for (int i = 13; i <= 43; ++i) CHECK(ran[i - 1] == "shm");
        for (int i = 48; i <= 50; ++i) CHECK(ran[i - 1] == "cma");
      }
      // The agreements are internal: the user's calls alone are counted.
      CHECK(stats_of(c.comm).collectives == before.collectives + 50);
    }
  }
  {
    env.set("TUTTI_FOLLOW_STATE", std::nullopt);  // off: the rule's algorithm alone
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    for (int i = 1; i <= 6; ++i) CHECK(run(c.comm, Collective::Alltoall, i) == "shm");
  }
  {
    env.set("TUTTI_FOLLOW_STATE", world_rank() == 0 ? "1" : "0");  // on only where all ask
    Comm c;
    REQUIRE(all_ranks(c.status == TUTTI_SUCCESS));
    for (int i = 1; i <= 6; ++i) CHECK(run(c.comm, Collective::Alltoall, i) == "shm");
  }
}

// alltoallv across nodes: the rules see the size the ranks agree on
// (base/agreed_size.hpp; the built-in table sends 2 MiB per rank and more to
// the MPI library's own), every rank runs the same algorithm, and each
// result is right. Rank 0's blocks are `scale` times the others', so the
// ranks' sizes differ and the smallest decides. On one node the rules see
// size 0 (never "mpi" there).
TEST_CASE("alltoallv across nodes follows the size every rank agreed on", "[tuning]") {
  const int p = world_size(), me = world_rank();
  if (p < 2) return;
  Env env;
  env.set("TUTTI_TUNE", std::nullopt);
  env.set("TUTTI_TUNING_FILE", std::nullopt);
  env.set("TUTTI_ALGO_ALLTOALLV", std::nullopt);
  Comm c;
  REQUIRE(c.status == TUTTI_SUCCESS);
  const bool spans = !all_ranks(ranks_on_this_node() == p);
  const size_t np = static_cast<size_t>(p);
  // A call whose other ranks' blocks hold `block` int32s; returns the
  // algorithm that ran, "" where the call failed or a result was wrong.
  auto call = [&](size_t block, size_t scale) -> std::string {
    auto from = [&](int src) { return src == 0 ? scale * block : block; };
    std::vector<size_t> scount(np, from(me)), sdispl(np), rcount(np), rdispl(np);
    size_t sent = 0, received = 0;
    for (size_t q = 0; q < np; ++q) {
      sdispl[q] = sent;
      sent += scount[q];
      rcount[q] = from(static_cast<int>(q));
      rdispl[q] = received;
      received += rcount[q];
    }
    std::vector<int32_t> in(sent), out(received, -1);
    for (size_t q = 0; q < np; ++q)
      for (size_t i = 0; i < scount[q]; ++i)
        in[sdispl[q] + i] = static_cast<int32_t>(me * 1000003 + static_cast<int>(q * 7919 + i));
    if (tutti_alltoallv(in.data(), scount.data(), sdispl.data(), out.data(), rcount.data(),
                        rdispl.data(), TUTTI_INT32, c.comm) != TUTTI_SUCCESS)
      return "";
    for (size_t q = 0; q < np; ++q)
      for (size_t i = 0; i < rcount[q]; ++i)
        if (out[rdispl[q] + i] != static_cast<int32_t>(static_cast<int>(q) * 1000003 + me * 7919 +
                                                       static_cast<int>(i)))
          return "";
    return tutti_comm_last_algorithm(c.comm);
  };
  // Per-rank sizes: the larger of what a rank sends and receives.
  const size_t mib = 1 << 20;
  const size_t small = 64 * 1024 / 4 / np;   // 64 KiB per rank (rank 0: 128 KiB)
  const size_t large = 4 * mib / 4 / np;     // 4 MiB per rank (rank 0: 8 MiB)
  const size_t mixed = 1 * mib / 4 / np;     // 1-1.5 MiB per rank, rank 0 at 2 MiB
  auto same_everywhere = [&](const std::string& ran) {
    std::vector<char> name(32, 0);
    ran.copy(name.data(), name.size() - 1);
    std::vector<char> first(name);
    MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
    return all_ranks(!ran.empty() && first == name);
  };
  std::string ran;
  // Calls 1-3 small (agreements on 1 and 3), calls 4-6 large: the small
  // size agreed on call 3 holds; call 7 agrees on the large one.
  for (int n = 1; n <= 3; ++n) {
    ran = call(small, 2);
    REQUIRE(same_everywhere(ran));
    CHECK((spans ? ran == "hierarchical_shm" : ran != "mpi"));
  }
  for (int n = 4; n <= 7; ++n) {
    ran = call(large, 2);
    REQUIRE(same_everywhere(ran));
    CHECK((spans ? ran == (n < 7 ? "hierarchical_shm" : "mpi") : ran != "mpi"));
  }
  // Rank 0 at 2 MiB, the others below: the smallest decides. Call 8 holds
  // the large size agreed on call 7; call 9 agrees on calls 8-9 (a changed
  // range), 11 on 10-11 (the same again).
  for (int n = 8; n <= 11; ++n) {
    ran = call(mixed, 2);
    REQUIRE(same_everywhere(ran));
    CHECK((spans ? ran == (n < 9 ? "mpi" : "hierarchical_shm") : ran != "mpi"));
  }
}


}  // namespace tutti::testing
