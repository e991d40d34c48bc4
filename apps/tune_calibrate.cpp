// What it measures, and how (docs/SCALE.md "Calibration"):
//   [intra], [inter]  ping-pong through tutti_send/tutti_recv between rank 0
//                     and the lowest rank on its node (intra) or on another
//                     node (inter): alpha is half the round trip of 8 bytes,
//                     beta the least-squares slope through 8 B, 4 KiB
//                     and the ladder's sizes up to the eager limit (eager
//                     messages; the rendezvous rate where they do not rise);
//                     rndv_alpha and rndv_beta the line through 256 KiB
//                     and 4 MiB (rendezvous, what large messages get),
//                     rndv_short_* the line through the first size above
//                     the link's eager limit and 256 KiB (the cost is
//                     concave: a message costs the lower line), eager_bytes
//                     where a ladder of 4-512 KiB jumps (below);
//                     [intra] rndv_cached_* the line through 256 KiB and
//                     1 MiB (messages whose buffers stay in the caches);
//                     written_send_factor how much longer 256 KiB and
//                     4 MiB take when each message sends what the one
//                     before wrote (the sides' buffers are apart in the
//                     others: a collective's input);
//                     inject_us the gap between the messages of a burst of
//                     64 of 8 B (tutti_isend at once), beyond one's latency. A
//                     job on one node has no [inter] pair: those keys keep
//                     their defaults, and the file says so.
//   intra.flag_us     half a cache line's round trip between ranks 0 and 1
//                     where they share a node (tutti-bench --bounds' probe).
//   intra.peer_read_us  a cross-memory read of 8 B from rank 0's node peer;
//   intra.peer_read_gbps  reads of 1 MiB from it, beyond that fixed cost.
//   intra.peer_copy_gbps  rank 1 copying 64 KiB that rank 0 has just
//                     written (tutti-bench --bounds' shared window), where
//                     they share a node and not where ranks share cores;
//   intra.peer_write_gbps  rank 0 copying 64 KiB in over the lines rank 1
//                     has just read (the same hand-overs).
//   [compute]         rank 0 alone: tutti's host reduction (float32 sum) and
//                     copies over buffers touched before timing, 256 KiB
//                     to 64 MiB (measure_compute: the rates beyond the
//                     caches, host_copy's at 64 MiB, the cache edge and
//                     the rates below it, memcpy's);
//                     cores_per_node the CPUs rank 0's node's ranks may run
//                     on (the union of their affinity masks).
//   protocol.call_us  what a call costs beyond its messages: an 8 B
//                     allreduce (recursive doubling: one message each way)
//                     on rank 0 and its first peer, less that link's alpha.
//   protocol.direct_call_us  the same for a call that runs directly on the
//                     caller's thread: an 8 B "shm" allreduce of rank 0 and
//                     its node peer, less what the model charges for its
//                     flags and copies.
//   eager_bytes       where the time a message takes jumps above its
//                     line (the rendezvous handshake), 8-256 KiB, per link;
//                     protocol.eager_bytes that of the link between nodes if
//                     there is one.
//   inter.nics is not measured (default).
// Every figure is the median of 5 repetitions.
#include "tune_calibrate.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "algos/registry.hpp"
#include "base/status.hpp"
#include "bench_bounds.hpp"
#include "cli.hpp"
#include "host/copy.hpp"
#include "host/reduce.hpp"
#include "model/fit.hpp"
#include "model/machine.hpp"
#include "model/predict.hpp"
#include "node/peer_memory.hpp"
#include "transport/mpi_types.hpp"
#include "tutti/tutti.h"

namespace tutti::apps {
namespace {

using Clock = std::chrono::steady_clock;

// intra.peer_copy_gbps and peer_write_gbps: copies of this size by rank 1
// out of memory rank 0 has just written, and by rank 0 into it. 64 KiB:
// the segment's slots at the sizes where the model erred most (32 KiB-2
// MiB calls through the segment: 0.3-0.45 of their measured time without
// the first cost, docs/SCALE.md).
constexpr size_t kPeerCopyBytes = 64 * 1024;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void check(int rc, const char* what) {
  if (rc != TUTTI_SUCCESS)
    fail(static_cast<Status>(rc), what, " failed: ", tutti_last_error());
}

// Half the round trip of `bytes` between world ranks a and b, in us (on a
// and b; other ranks return 0). Median of 5 repetitions.
// Each rank sends from one buffer and receives into another: a collective
// sends its input, which the sender has not just written. `written`: both
// through one buffer instead, so that every message sends what the one
// before wrote (a pipeline forwarding what it received): the peer's copy
// then pulls lines dirty in the sender's cache (LinkCost::written_factor).
double half_round_trip(tutti_comm_t comm, int me, int a, int b, size_t bytes,
                       bool written = false) {
  if (me != a && me != b) return 0;
  std::vector<unsigned char> send_buf(std::max<size_t>(bytes, 1), 1);
  std::vector<unsigned char> recv_buf(std::max<size_t>(bytes, 1), 1);
  const int peer = me == a ? b : a;
  const int iters = bytes <= 65536 ? 200 : 10;
  auto send = [&] {
    check(tutti_send(send_buf.data(), bytes, TUTTI_UINT8, peer, 7, comm), "tutti_send");
  };
  auto recv = [&] {
    unsigned char* into = written ? send_buf.data() : recv_buf.data();
    check(tutti_recv(into, bytes, TUTTI_UINT8, peer, 7, comm), "tutti_recv");
  };
  auto exchange = [&] {
    if (me == a) {
      send();
      recv();
    } else {
      recv();
      send();
    }
  };
  for (int i = 0; i < 5; ++i) exchange();  // warm up: connections, registrations
  std::vector<double> reps;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) exchange();
    reps.push_back(seconds_since(start) * 1e6 / iters / 2);
  }
  return median(reps);
}

// The time between the messages of a burst of 8-byte ones from world rank
// a to b, in us (on a and b): a sends kBurst at once, b answers the last
// with one message; less the round trip of one message (2 * half_trip),
// spread over the kBurst - 1 others. Median of 5.
double burst_gap(tutti_comm_t comm, int me, int a, int b, double half_trip) {
  if (me != a && me != b) return 0;
  constexpr int kBurst = 64;
  std::vector<unsigned char> buf(8 * kBurst, 1);
  std::vector<tutti_request_t> reqs(kBurst);
  auto burst = [&] {
    for (int i = 0; i < kBurst; ++i) {
      unsigned char* at = buf.data() + 8 * i;
      check(me == a ? tutti_isend(at, 8, TUTTI_UINT8, b, 8, comm, &reqs[i])
                    : tutti_irecv(at, 8, TUTTI_UINT8, a, 8, comm, &reqs[i]),
            me == a ? "tutti_isend" : "tutti_irecv");
    }
    for (tutti_request_t& r : reqs) check(tutti_wait(&r), "tutti_wait");
    if (me == a) check(tutti_recv(buf.data(), 8, TUTTI_UINT8, b, 9, comm), "tutti_recv");
    else check(tutti_send(buf.data(), 8, TUTTI_UINT8, a, 9, comm), "tutti_send");
  };
  for (int i = 0; i < 5; ++i) burst();  // warm up
  std::vector<double> reps;
  for (int rep = 0; rep < 5; ++rep) {
    constexpr int kIters = 20;
    const auto start = Clock::now();
    for (int i = 0; i < kIters; ++i) burst();
    const double per_burst = seconds_since(start) * 1e6 / kIters;
    reps.push_back(std::max(0.0, (per_burst - 2 * half_trip) / (kBurst - 1)));
  }
  return median(reps);
}

struct Link {
  bool measured = false;
  model::LinkCost cost;
  double eager = 0;   // the link's eager limit, 0 where no jump was seen
  std::string probe;  // the ladder's half round trips, for the file's comment
  std::string probe_written;  // those of written_factor, for the file's comment
  std::string probe_cached;   // the cached line's second point, for the file's comment
};

// The line through two ping-pong points (bytes, us): (alpha, bytes per us).
std::pair<double, double> line_through(double b0, double t0, double b1, double t1) {
  const double rate = (b1 - b0) / std::max(t1 - t0, 1e-3);
  return {std::max(0.0, t0 - b0 / rate), rate};
}

// Waits for every rank of the world without spinning, so that the ranks
// that take no part in a measurement leave the cores to the pair measured.
void quiet_barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
  for (int done = 0;;) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// The cached rendezvous line's second size ([intra] rndv_cached_*, through
// 256 KiB and this): a size whose buffers stay in the caches (1 MiB on each
// side, send and receive, for 2 ranks) where 4 MiB does not.
constexpr size_t kCachedLineBytes = 1 << 20;
// The ladder of sizes behind the eager limit and the first rendezvous line.
constexpr size_t kLadderFirst = 4 << 10, kLadderLast = 512 << 10, kLadderKnee = 256 << 10;
// The model uses the first rendezvous line up to the size it was fitted to.
static_assert(kLadderKnee == model::LinkCost::kShortLineMaxBytes);

// The largest message sent eagerly, from the ladder's half round trips `t`
// (sizes kLadderFirst, doubling): 0 if no jump is seen.
double eager_limit(const std::vector<double>& t) {
  // On one protocol's line (alpha + n/beta) each step up the ladder adds
  // twice what the step before added; the switch to rendezvous adds its
  // handshake on top. So the limit is where the added time grows most from
  // one step to the next, if that is well above the line's 2x (2.9x was
  // seen at a real limit of 8 KiB in the machine's slow state).
  double best = 2.5;
  size_t limit = 0;
  for (size_t i = 1; i + 1 < t.size(); ++i) {
    const double growth = (t[i + 1] - t[i]) / std::max(t[i] - t[i - 1], 0.05);
    if (growth > best) {
      best = growth;
      limit = kLadderFirst << i;
    }
  }
  return static_cast<double>(limit);
}

// Both regimes between world ranks 0 and b (result on rank 0): eager
// messages from 8 B and 4 KiB; the eager limit from a ladder of 4-512 KiB;
// rendezvous messages by two lines, one through the first size above the
// limit and 256 KiB, one through 256 KiB and 4 MiB (a message costs the
// lower: LinkCost::line).
// Where a node's ranks outnumber its cores, the model shares the cores
// among the CPU work (Machine::cores_per_node) but not the latency of a
// descheduled rank, so the latency is measured while the other ranks spin
// in a barrier (as a job's busy ranks would), the rates while they sleep
// (on cores of the pair's own), and the rendezvous lines moved up by the
// difference of the two latencies. On a node with a core per rank the two
// latencies agree.
Link measure_link(tutti_comm_t comm, int me, int b, double default_eager, bool intra) {
  Link l;
  const double t8_busy = half_round_trip(comm, me, 0, b, 8);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t8 = half_round_trip(comm, me, 0, b, 8);
  const double t4k = half_round_trip(comm, me, 0, b, 4 << 10);
  std::vector<double> ladder;
  for (size_t n = kLadderFirst; n <= kLadderLast; n *= 2)
    ladder.push_back(half_round_trip(comm, me, 0, b, n));
  const double t4m = half_round_trip(comm, me, 0, b, 4 << 20);
  const double t_cached = intra ? half_round_trip(comm, me, 0, b, kCachedLineBytes) : 0;
  const double t256k_written = half_round_trip(comm, me, 0, b, kLadderKnee, true);
  const double t4m_written = half_round_trip(comm, me, 0, b, 4 << 20, true);
  const double gap = burst_gap(comm, me, 0, b, t8);
  quiet_barrier();
  if (me != 0) return l;
  l.measured = true;
  auto at = [&](size_t n) {
    size_t i = 0;
    while ((kLadderFirst << i) < n) ++i;
    return ladder[i];
  };
  for (size_t i = 0; i < ladder.size(); ++i)
    l.probe += str(i ? ", " : "", kLadderFirst >> 10 << i, " KiB ",
                   static_cast<int>(ladder[i] * 10 + 0.5) / 10.0, " us");
  l.cost.alpha_us = t8_busy;  // the small-message latency itself
  const double slow_wakeup = std::max(0.0, t8_busy - t8);
  std::tie(l.cost.rndv_alpha_us, l.cost.rndv_bytes_per_us) =
      line_through(kLadderKnee, at(kLadderKnee), 4 << 20, t4m);
  l.cost.rndv_alpha_us += slow_wakeup;
  l.eager = eager_limit(ladder);
  const double eager_max = l.eager > 0 ? l.eager : default_eager;
  // The eager rate: the least-squares slope through 8 B, 4 KiB and the
  // ladder's sizes up to the eager limit; where the times do not grow with
  // the bytes (noise), the rendezvous rate.
  std::vector<std::pair<double, double>> eager_points{{8, t8}, {4 << 10, t4k}};
  for (size_t i = 0; i < ladder.size() && static_cast<double>(kLadderFirst << i) <= eager_max; ++i)
    eager_points.emplace_back(static_cast<double>(kLadderFirst << i), ladder[i]);
  const std::optional<model::FittedLine> eager_line = model::fit_line(eager_points);
  l.cost.bytes_per_us = eager_line ? eager_line->bytes_per_us : l.cost.rndv_bytes_per_us;
  const size_t first_rndv = 2 * static_cast<size_t>(eager_max);
  if (first_rndv >= kLadderFirst && first_rndv < kLadderKnee) {
    std::tie(l.cost.rndv_short_alpha_us, l.cost.rndv_short_bytes_per_us) =
        line_through(static_cast<double>(first_rndv), at(first_rndv), kLadderKnee, at(kLadderKnee));
    l.cost.rndv_short_alpha_us += slow_wakeup;
  }
  if (l.eager > 0) l.cost.eager_bytes = l.eager;
  if (intra) {
    std::tie(l.cost.rndv_cached_alpha_us, l.cost.rndv_cached_bytes_per_us) =
        line_through(kLadderKnee, at(kLadderKnee), kCachedLineBytes, t_cached);
    l.cost.rndv_cached_alpha_us += slow_wakeup;
    l.probe_cached = str(kCachedLineBytes >> 20, " MiB ", static_cast<int>(t_cached + 0.5), " us");
  }
  l.cost.written_factor =
      (t256k_written / std::max(at(kLadderKnee), 1e-3) + t4m_written / std::max(t4m, 1e-3)) / 2;
  l.probe_written = str("256 KiB ", static_cast<int>(t256k_written * 10 + 0.5) / 10.0, " us, 4 MiB ",
                        static_cast<int>(t4m_written + 0.5), " us (else ",
                        static_cast<int>(t4m + 0.5), ")");
  l.cost.inject_us = gap;
  return l;
}

// Time of an 8 B allreduce by `algorithm` between world ranks 0 and b, in
// us, on rank 0 (0 elsewhere). Collective.
double allreduce_8b(int me, int b, const char* algorithm) {
  MPI_Comm pair = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(MPI_COMM_WORLD, me == 0 || me == b ? 0 : MPI_UNDEFINED, me, &pair),
            "MPI_Comm_split");
  double us = 0;
  if (pair != MPI_COMM_NULL) {
    tutti_comm_t comm = nullptr;
    check(tutti_comm_create(pair, &comm), "tutti_comm_create");
    try {
      check(tutti_comm_force_algorithm(comm, "allreduce", algorithm),
            "tutti_comm_force_algorithm");
      float in[2] = {1, 2}, out[2] = {};
      auto call = [&] {
        check(tutti_allreduce(in, out, 2, TUTTI_FLOAT32, TUTTI_SUM, comm), "tutti_allreduce");
      };
      for (int i = 0; i < 50; ++i) call();
      std::vector<double> reps;
      for (int rep = 0; rep < 5; ++rep) {
        const auto start = Clock::now();
        for (int i = 0; i < 200; ++i) call();
        reps.push_back(seconds_since(start) * 1e6 / 200);
      }
      us = median(reps);
    } catch (...) {
      tutti_comm_destroy(comm);
      MPI_Comm_free(&pair);
      throw;
    }
    check(tutti_comm_destroy(comm), "tutti_comm_destroy");
    MPI_Comm_free(&pair);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return me == 0 ? us : 0;
}

// Cross-memory reads from world rank b's memory, on rank 0 (zeros
// elsewhere, and where the kernel refuses: the file then keeps the
// defaults): the fixed cost of one (a read of 8 B, us) and the rate of the
// bytes beyond it (reads of kPeerReadBytes, bytes per us). Collective.
constexpr size_t kPeerReadBytes = 1 << 20;
struct PeerRead {
  double us = 0, bytes_per_us = 0;
};
PeerRead peer_read_costs(int me, int b) {
  uint64_t value = 42;
  std::vector<char> block(me == b ? kPeerReadBytes : 0, 1);  // touched: its pages exist
  uint64_t where[3] = {static_cast<uint64_t>(getpid()), reinterpret_cast<uint64_t>(&value),
                       reinterpret_cast<uint64_t>(block.data())};
  PeerRead cost;
  if (me == b) {
    check_mpi(MPI_Send(where, 3, MPI_UINT64_T, 0, 0, MPI_COMM_WORLD), "MPI_Send");
  } else if (me == 0) {
    check_mpi(MPI_Recv(where, 3, MPI_UINT64_T, b, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv");
    uint64_t got = 0;
    std::string why;
    if (read_peer_memory(where[0], &got, where[1], sizeof got, why) && got == 42) {
      // Median us per read, or 0 if any read failed.
      auto timed = [&](void* dst, uint64_t src, size_t bytes, int reads) {
        std::vector<double> reps;
        bool ok = true;
        for (int rep = 0; rep < 5; ++rep) {
          const auto start = Clock::now();
          for (int i = 0; i < reads; ++i) ok = read_peer_memory(where[0], dst, src, bytes, why) && ok;
          reps.push_back(seconds_since(start) * 1e6 / reads);
        }
        return ok ? median(reps) : 0.0;
      };
      cost.us = timed(&got, where[1], sizeof got, 1000);
      std::vector<char> landing(kPeerReadBytes, 0);
      const double large_us = cost.us > 0 ? timed(landing.data(), where[2], kPeerReadBytes, 20) : 0;
      if (large_us > cost.us) cost.bytes_per_us = kPeerReadBytes / (large_us - cost.us);
      if (cost.us == 0 || large_us == 0)
        std::fprintf(stderr, "tutti-tune: a cross-memory read of rank %d failed while timed (%s)\n",
                     b, why.c_str());
    } else {
      std::fprintf(stderr, "tutti-tune: no cross-memory read of rank %d (%s): intra.peer_read_us "
                   "and peer_read_gbps not measured\n", b, why.c_str());
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);  // b's memory lives until rank 0 is done with it
  return cost;
}

// What a direct shared-memory call (an 8 B "shm" allreduce of two ranks of
// a node, on the caller's thread) that took `measured` us costs beyond what
// the model `m` charges for its flags and copies: protocol.direct_call_us.
double direct_call_us(double measured, const model::Machine& m) {
  model::Machine bare = m;
  bare.call_us = bare.direct_call_us = 0;
  const algos::Algorithm* shm = algos::find_algorithm(Collective::Allreduce, "shm");
  CollArgs args{.coll = Collective::Allreduce, .dtype = Datatype::Float32, .op = Op::Sum};
  args.count = 2;
  const model::Prediction p =
      model::predict(*shm, args, model::model_topology(2, 2), bare);
  if (!p.error.empty()) fail(TUTTI_ERR_INTERNAL, "model of the shm allreduce: ", p.error);
  return std::max(0.0, measured - p.us);
}

// Bytes per us of f over `bytes`, median of 5.
template <typename F>
double throughput(size_t bytes, F f) {
  std::vector<double> reps;
  for (int rep = 0; rep < 6; ++rep) {
    const auto start = Clock::now();
    f();
    if (rep > 0) reps.push_back(static_cast<double>(bytes) / (seconds_since(start) * 1e6));
  }
  return median(reps);
}

// Rank 0's copy and float32 sum rates at 256 KiB to 64 MiB per operand.
// Beyond the caches (64 MiB) they are copy_gbps and reduce_gbps; the copy
// is host_copy's, as tutti copies (from host_streaming_copy_min_bytes() on
// with non-temporal stores: 64 MiB 1.5x memcpy's rate here). The cache
// edge is found with memcpy, whose stores stay in the caches: cache_bytes
// is the largest size whose copy runs at least half as fast as the
// fastest, and the medians of the rates up to it are the cached rates
// (none when even 64 MiB runs that fast: no cache edge seen). Largest,
// not the first below half: one slow step (a descheduling, a change of
// the machine's speed state) once put the edge at 256 KiB instead of
// 8 MiB and every prediction above it at 2x.
void measure_compute(model::Machine& m) {
  constexpr size_t kLargest = 64 << 20;
  std::vector<float> a(kLargest / 4, 1.0f), b(kLargest / 4, 2.0f), dst(kLargest / 4, 0.0f);
  std::vector<std::tuple<size_t, double, double>> ladder;  // (bytes, copy, reduce)
  for (size_t n = 256 << 10; n <= kLargest; n *= 2) {
    const size_t repeat = kLargest / n;  // every size times 64 MiB of work
    const double copy = throughput(n * repeat, [&] {
      for (size_t i = 0; i < repeat; ++i) std::memcpy(dst.data(), a.data(), n);
    });
    const double reduce = throughput(n * repeat, [&] {
      for (size_t i = 0; i < repeat; ++i)
        host_reduce(dst.data(), a.data(), b.data(), n / 4, Datatype::Float32, Op::Sum);
    });
    ladder.emplace_back(n, copy, reduce);
  }
  m.copy_bytes_per_us =
      throughput(kLargest, [&] { host_copy(dst.data(), a.data(), kLargest); });
  m.reduce_bytes_per_us = std::get<2>(ladder.back());
  double fastest = 0;
  for (const auto& step : ladder) fastest = std::max(fastest, std::get<1>(step));
  size_t cache = 0;
  for (const auto& [n, copy, reduce] : ladder)
    if (copy >= fastest / 2) cache = n;
  if (cache == 0 || cache == kLargest) return;
  std::vector<double> copies, reduces;
  for (const auto& [n, copy, reduce] : ladder)
    if (n <= cache) {
      copies.push_back(copy);
      reduces.push_back(reduce);
    }
  m.cache_bytes = static_cast<double>(cache);
  m.copy_cached_bytes_per_us = median(copies);
  m.reduce_cached_bytes_per_us = median(reduces);
}

}  // namespace

int calibrate(const std::string& path, const std::string& command_line) {
  int me = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Every rank's node, named by its lowest rank.
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  int leader = me;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local), "MPI_Allreduce");
  // The CPUs the node's ranks may run on: the union of their masks.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) CPU_ZERO(&cpus);  // unknown: 0
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &cpus, static_cast<int>(sizeof cpus), MPI_BYTE, MPI_BOR,
                          local),
            "MPI_Allreduce (CPUs)");
  MPI_Comm_free(&local);
  std::vector<int> leaders(static_cast<size_t>(size));
  check_mpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD),
            "MPI_Allgather");
  int same_node = -1, other_node = -1;
  for (int r = 1; r < size; ++r) {
    if (leaders[static_cast<size_t>(r)] == leaders[0] && same_node < 0) same_node = r;
    if (leaders[static_cast<size_t>(r)] != leaders[0] && other_node < 0) other_node = r;
  }

  tutti_comm_t comm = nullptr;
  check(tutti_comm_create(MPI_COMM_WORLD, &comm), "tutti_comm_create");
  model::Machine m;
  Link intra, inter;
  try {
    if (same_node > 0) intra = measure_link(comm, me, same_node, m.eager_bytes, true);
    if (other_node > 0) inter = measure_link(comm, me, other_node, m.eager_bytes, false);
  } catch (...) {
    tutti_comm_destroy(comm);
    throw;
  }
  check(tutti_comm_destroy(comm), "tutti_comm_destroy");
  // The call overhead, on the nearest pair there is.
  const int peer = same_node > 0 ? same_node : other_node;
  const double call = peer > 0 ? allreduce_8b(me, peer, "recursive_doubling") : 0;
  // The shared segment's costs: a flag (half a cache line's round trip
  // between ranks 0 and 1, where they share a node), a peer read and a
  // direct call. Not where rank 0's node has more ranks than cores: the
  // model then charges a flag a message's alpha and a direct call call_us
  // (a waiter must first be woken), and a cache line's round trip measures
  // the scheduler.
  int shared_cores = 0;
  if (me == 0) {
    const auto node_ranks = std::count(leaders.begin(), leaders.end(), leaders[0]);
    shared_cores = node_ranks > CPU_COUNT(&cpus) ? 1 : 0;
  }
  check_mpi(MPI_Bcast(&shared_cores, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::optional<double> flag_trip;
  std::optional<HardwareBounds::PeerCopy> peer_copy;
  double direct = -1;
  if (!shared_cores) {
    HardwareBounds bounds(MPI_COMM_WORLD);
    flag_trip = bounds.round_trip_us(20000);
    peer_copy = bounds.peer_copy_us(kPeerCopyBytes, 500);
    if (same_node > 0) direct = allreduce_8b(me, same_node, "shm");
  }
  const PeerRead read = same_node > 0 ? peer_read_costs(me, same_node) : PeerRead{};
  if (me == 0) {
    if (intra.measured) m.intra = intra.cost;
    if (inter.measured) m.inter = inter.cost;
    // protocol.eager_bytes: the limit between nodes where there is a link
    // between nodes (it matters most there), else inside the node; each
    // link carries its own too.
    const Link& far = inter.measured ? inter : intra;
    if (far.eager > 0) m.eager_bytes = far.eager;
    m.cores_per_node = CPU_COUNT(&cpus);
    if (flag_trip) m.flag_us = *flag_trip / 2;
    if (peer_copy && peer_copy->read_us > 0)
      m.peer_copy_bytes_per_us = kPeerCopyBytes / peer_copy->read_us;
    if (peer_copy && peer_copy->write_us > 0)
      m.peer_write_bytes_per_us = kPeerCopyBytes / peer_copy->write_us;
    m.peer_read_us = read.us;
    m.peer_read_bytes_per_us = read.bytes_per_us;
    if (peer > 0)
      m.call_us = std::max(0.0, call - (same_node > 0 ? m.intra.alpha_us : m.inter.alpha_us));
    measure_compute(m);
    if (direct >= 0) m.direct_call_us = direct_call_us(direct, m);

    std::ofstream f(path);
    auto gbps = [](double bytes_per_us) { return bytes_per_us / 1e3; };
    char line[256];
    f << "# Machine description for tutti's cost model (docs/SCALE.md), written by\n"
      << "# " << command_line << " at " << utc_now() << ".\n"
      << "# alpha: half the round trip of 8 B; beta: the least-squares slope through\n"
      << "# 8 B, 4 KiB and the ladder up to eager_bytes; rndv_*: the line through\n"
      << "# 256 KiB and 4 MiB; rndv_short_*: the line through the\n"
      << "# first size above eager_bytes and 256 KiB (a rendezvous message costs\n"
      << "# the lower line), each side's buffers apart; rndv_cached_*: the line through\n"
      << "# 256 KiB and 1 MiB (messages whose buffers stay in the caches); written_send_factor:\n"
      << "# sending what the last message wrote; eager_bytes: where a 4-512 KiB ladder jumps;\n"
      << "# inject: the gap between the messages of a burst of 64 of 8 B;\n"
      << "# compute: rank 0's float32 sum over 64 MiB and up to the cache edge, its copy\n"
      << "# over 64 MiB (tutti's, streaming) and up to the edge (memcpy), and the CPUs\n"
      << "# its node's ranks may run on; call_us: an 8 B\n"
      << "# allreduce of two ranks less alpha. Medians of 5.\n";
    // `extra`: the link's keys beyond the message costs, where it was measured.
    auto link_text = [&](const char* name, const Link& l, const model::LinkCost& c,
                         const char* why_not, const std::string& extra) {
      std::string text = str("[", name, "]", l.measured ? "" : why_not, "\n");
      std::snprintf(line, sizeof line, "alpha_us = %.3f\nbeta_gbps = %.3f\n", c.alpha_us,
                    gbps(c.bytes_per_us));
      text += line;
      if (l.measured) {
        std::snprintf(line, sizeof line,
                      "rndv_alpha_us = %.3f\nrndv_beta_gbps = %.3f\ninject_us = %.3f\n",
                      c.rndv_alpha_us, gbps(c.rndv_bytes_per_us), c.inject_us);
        text += line;
        if (c.rndv_short_alpha_us >= 0) {
          std::snprintf(line, sizeof line, "rndv_short_alpha_us = %.3f\nrndv_short_beta_gbps = %.3f\n",
                        c.rndv_short_alpha_us, gbps(c.rndv_short_bytes_per_us));
          text += line;
        }
        if (c.rndv_cached_alpha_us >= 0) {
          std::snprintf(line, sizeof line, "rndv_cached_alpha_us = %.3f\nrndv_cached_beta_gbps = %.3f",
                        c.rndv_cached_alpha_us, gbps(c.rndv_cached_bytes_per_us));
          text += str(line, "  # ", l.probe_cached, "\n");
        }
        text += l.eager > 0 ? str("eager_bytes = ", static_cast<long long>(l.eager), "\n")
                            : std::string("# eager_bytes: no jump seen from 4 to 512 KiB\n");
        std::snprintf(line, sizeof line, "written_send_factor = %.3f", c.written_factor);
        text += str(line, "  # sending what the last message wrote: ", l.probe_written, "\n");
        text += str("# (half round trips: ", l.probe, ")\n") + extra;
      }
      return text;
    };
    // A key not measured is left out (its default: as a message, as call_us).
    std::string segment_keys;
    if (m.flag_us >= 0) {
      std::snprintf(line, sizeof line, "flag_us = %.3f\n", m.flag_us);
      segment_keys = line;
    } else {
      segment_keys = str("# flag_us not measured (",
                         shared_cores ? "ranks share cores" : "ranks 0 and 1 on two nodes",
                         "): a message's alpha\n");
    }
    std::snprintf(line, sizeof line, "peer_read_us = %.3f%s\n", m.peer_read_us,
                  read.us > 0 ? "" : "  # not measured");
    segment_keys += line;
    if (m.peer_read_bytes_per_us > 0) {
      std::snprintf(line, sizeof line, "peer_read_gbps = %.3f  # reads of %zu KiB\n",
                    gbps(m.peer_read_bytes_per_us), kPeerReadBytes >> 10);
      segment_keys += line;
    }
    if (m.peer_copy_bytes_per_us > 0) {
      std::snprintf(line, sizeof line, "peer_copy_gbps = %.3f  # %zu KiB rank 0 just wrote\n",
                    gbps(m.peer_copy_bytes_per_us), kPeerCopyBytes >> 10);
      segment_keys += line;
    }
    if (m.peer_write_bytes_per_us > 0) {
      std::snprintf(line, sizeof line, "peer_write_gbps = %.3f  # %zu KiB over lines rank 1 just read\n",
                    gbps(m.peer_write_bytes_per_us), kPeerCopyBytes >> 10);
      segment_keys += line;
    }
    f << link_text("intra", intra, m.intra, "  # not measured (one rank per node): defaults",
                   segment_keys)
      << link_text("inter", inter, m.inter, "  # not measured (one node): defaults", "")
      << "nics = " << m.nics_per_node << "  # not measured\n";
    std::snprintf(line, sizeof line,
                  "[compute]\nreduce_gbps = %.3f\ncopy_gbps = %.3f\ncores_per_node = %d\n",
                  gbps(m.reduce_bytes_per_us), gbps(m.copy_bytes_per_us), m.cores_per_node);
    f << line;
    if (m.cache_bytes > 0) {
      std::snprintf(line, sizeof line,
                    "cache_bytes = %.0f\nreduce_cached_gbps = %.3f\ncopy_cached_gbps = %.3f\n",
                    m.cache_bytes, gbps(m.reduce_cached_bytes_per_us),
                    gbps(m.copy_cached_bytes_per_us));
      f << line;
    } else {
      f << "cache_bytes = 0  # no cache edge seen from 256 KiB to 64 MiB\n";
    }
    f << "[protocol]\neager_bytes = " << static_cast<long long>(m.eager_bytes)
      << (far.eager > 0 ? "" : "  # not measured (no jump seen from 4 KiB to 512 KiB): default")
      << "\n";
    std::snprintf(line, sizeof line, "call_us = %.3f%s\n", m.call_us,
                  peer > 0 ? "" : "  # not measured (one rank): default");
    f << line;
    if (m.direct_call_us >= 0) {
      std::snprintf(line, sizeof line, "direct_call_us = %.3f\n", m.direct_call_us);
      f << line;
    } else {
      f << "# direct_call_us not measured ("
        << (shared_cores ? "ranks share cores" : "one rank per node") << "): call_us\n";
    }
    f.close();
    if (!f) fail(TUTTI_ERR_INVALID_ARGUMENT, "cannot write '", path, "'");
    // The file must read back as what was measured.
    (void)model::load_machine(path);
    std::fprintf(stderr,
                 "tutti-tune: calibrated: intra %.2f us + %.2f GB/s (large %.2f GB/s, gap %.2f us)%s, "
                 "inter %.2f us + %.2f GB/s (large %.2f GB/s, gap %.2f us)%s, reduce %.2f GB/s, "
                 "copy %.2f GB/s, call %.2f us; wrote %s\n",
                 m.intra.alpha_us, gbps(m.intra.bytes_per_us), gbps(m.intra.rate(false)),
                 m.intra.inject_us, intra.measured ? "" : " (default)", m.inter.alpha_us,
                 gbps(m.inter.bytes_per_us), gbps(m.inter.rate(false)), m.inter.inject_us,
                 inter.measured ? "" : " (default)",
                 gbps(m.reduce_bytes_per_us), gbps(m.copy_bytes_per_us), m.call_us, path.c_str());
  }
  return 0;
}

}  // namespace tutti::apps
