#include "bench_soak.hpp"

#include <malloc.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "algos/registry.hpp"
#include "base/status.hpp"
#include "bench_soak_comms.hpp"
#include "reference.hpp"
#include "user_call.hpp"

namespace tutti::apps {
namespace {

using testing::Bytes;

// Bytes the program holds from malloc (in use, not freed), in KiB. A leak
// grows it even where the leaked blocks reuse pages the heap already had
// resident (after the warm-up's large buffers were freed), which the
// resident set does not show.
long heap_in_use_kib() {
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<long>((mi.uordblks + mi.hblkhd) / 1024);
}

// Resident set size of this process, from /proc/self/statm.
long resident_kib() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  if (!(statm >> pages_total >> pages_resident)) return -1;
  return pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Every rank draws the same sequence, so all agree on each call without
// communicating.
class SharedRandom {
 public:
  explicit SharedRandom(uint64_t seed) : state_(seed) {}
  uint64_t next() { return testing::mix(state_++); }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  bool coin() { return next() & 1; }

 private:
  uint64_t state_;
};

// One soak call, as every rank sees it.
struct SoakCall {
  CollArgs args;           // this rank's
  std::string algorithm;   // "" = the dispatcher's choice
  bool in_place_requested = false;
  bool nonblocking = false;
  uint64_t data_seed = 0;
  // --soak-p2p: instead of a collective, a ring exchange: each rank sends
  // `args.count` int32 to the next rank and receives from the previous one,
  // both non-blocking, with this tag (from any source where any_source).
  bool ring = false;
  int tag = 0;
  bool any_source = false;
};

// Message sizes log-uniform from 0 to max_bytes, so that small, medium and
// large calls are all frequent.
uint64_t random_bytes(SharedRandom& rng, uint64_t max_bytes) {
  int top = 0;
  while ((uint64_t{1} << (top + 1)) <= max_bytes) ++top;
  const size_t e = rng.below(static_cast<size_t>(top) + 2);
  if (e == 0) return 0;
  const uint64_t lo = uint64_t{1} << (e - 1);
  return std::min(max_bytes, lo + rng.next() % lo);
}

// A ring exchange of up to 64 KiB.
SoakCall draw_ring(SharedRandom& rng) {
  SoakCall call;
  call.ring = true;
  call.args.dtype = Datatype::Int32;
  call.args.count = random_bytes(rng, 64 << 10) / 4;
  call.tag = static_cast<int>(rng.below(1000));
  call.any_source = rng.coin();
  call.data_seed = rng.next();
  return call;
}

// The ranks a ring exchange sends to and receives from.
int next_rank(int rank, int nranks) { return (rank + 1) % nranks; }
int previous_rank(int rank, int nranks) { return (rank + nranks - 1) % nranks; }

// Element k of what `from` sends in a ring exchange.
int32_t ring_value(const SoakCall& call, int from, size_t k) {
  return static_cast<int32_t>(testing::mix(call.data_seed + static_cast<uint64_t>(from) * 1000003 + k));
}

SoakCall draw_call(SharedRandom& rng, int nranks, uint64_t max_bytes) {
  SoakCall call;
  CollArgs& a = call.args;
  a.coll = kAllCollectives[rng.below(kNumCollectives)];
  a.dtype = kAllDatatypes[rng.below(kNumDatatypes)];
  a.op = kAllOps[rng.below(kNumOps)];
  a.root = static_cast<int>(rng.below(static_cast<size_t>(nranks)));
  if (a.coll != Collective::Barrier)
    a.count = count_for_message_bytes(a.coll, random_bytes(rng, max_bytes), a.dtype, nranks);
  const std::vector<const algos::Algorithm*> algos = algos::algorithms_for(a.coll);
  const size_t pick = rng.below(algos.size() + 1);  // one more: the dispatcher
  call.algorithm = pick < algos.size() ? std::string(algos[pick]->name) : "";
  call.in_place_requested = a.coll != Collective::Bcast && a.coll != Collective::Barrier && rng.coin();
  call.nonblocking = rng.coin();
  call.data_seed = rng.next();
  return call;
}

// Rank q's arguments for `call` (in place only where MPI allows it).
CollArgs args_of_rank(const SoakCall& call, int q) {
  CollArgs a = call.args;
  a.in_place = call.in_place_requested && (!has_root(a.coll) || q == a.root);
  return a;
}

struct CallResult {
  long wrong = 0;
  std::string error;
};

// One soak call on this rank: its buffers, the result it must produce and,
// while a non-blocking call is in flight, its request.
struct CheckedCall {
  SoakCall call;
  size_t comm_index = 0;  // which of the soak's communicators (--soak-comms)
  CollArgs mine;  // this rank's arguments
  Bytes want;
  std::unique_ptr<testing::UserBuffers> bufs;
  tutti_request_t request = nullptr;
  // A ring exchange: the send's request, and the buffers.
  tutti_request_t send_request = nullptr;
  std::vector<int32_t> ring_send, ring_recv;
  CallResult result;
};

// A ring exchange's start (--soak-p2p): the receive first, then the send.
void start_ring(tutti_comm_t comm, int rank, int nranks, CheckedCall& c) {
  const SoakCall& call = c.call;
  const size_t n = call.args.count;
  const int next = next_rank(rank, nranks), previous = previous_rank(rank, nranks);
  c.ring_send.resize(n);
  for (size_t k = 0; k < n; ++k) c.ring_send[k] = ring_value(call, rank, k);
  c.ring_recv.assign(n, -1);
  int st = call.any_source ? tutti_irecv_from(c.ring_recv.data(), n, TUTTI_INT32, TUTTI_ANY_SOURCE,
                                              call.tag, comm, nullptr, &c.request)
                           : tutti_irecv(c.ring_recv.data(), n, TUTTI_INT32, previous, call.tag,
                                         comm, &c.request);
  if (st == TUTTI_SUCCESS)
    st = tutti_isend(c.ring_send.data(), n, TUTTI_INT32, next, call.tag, comm, &c.send_request);
  if (st != TUTTI_SUCCESS) c.result.error = str(tutti_strerror(st), ": ", tutti_last_error());
}

// Lays out `c.call` on this rank and starts it: a blocking call returns
// done, a non-blocking one leaves its request in `c` for finish(). A rank
// outside the call's communicator does nothing.
void start(const SoakComm& on, CheckedCall& c) {
  if (!on.comm) return;
  tutti_comm_t comm = on.comm;
  const int rank = on.rank, nranks = on.nranks;
  const SoakCall& call = c.call;
  if (call.ring) return start_ring(comm, rank, nranks, c);
  const int p = nranks;
  // alltoallv: every rank's layout (rank q's counts depend on q), with
  // counts averaging the drawn count.
  std::vector<testing::AlltoallvLayout> layouts;
  std::vector<CollArgs> per_rank;
  for (int q = 0; q < p; ++q) {
    per_rank.push_back(args_of_rank(call, q));
    if (call.args.coll == Collective::Alltoallv)
      layouts.push_back(testing::alltoallv_layout(q, p, call.args.count, call.data_seed,
                                                  call.in_place_requested));
  }
  if (!layouts.empty())
    for (int q = 0; q < p; ++q) layouts[q].attach(per_rank[q]);

  std::vector<Bytes> inputs;
  for (int q = 0; q < p; ++q) {
    const BufferShape s = buffer_shape(per_rank[q], q, p);
    size_t n = per_rank[q].coll == Collective::Bcast ? s.output_bytes : s.input_bytes;
    if (per_rank[q].coll == Collective::Scatter && q != per_rank[q].root) n = 0;
    inputs.push_back(testing::make_input(per_rank[q], q, p, n, call.data_seed));
  }
  c.want = testing::reference_outputs(per_rank, inputs)[rank];
  c.mine = per_rank[rank];

  const std::string coll_name(collective_name(c.mine.coll));
  if (tutti_comm_force_algorithm(comm, coll_name.c_str(), call.algorithm.c_str()) != TUTTI_SUCCESS) {
    c.result.error = str("force ", call.algorithm, ": ", tutti_last_error());
    return;
  }
  c.bufs = std::make_unique<testing::UserBuffers>(c.mine, rank, p);
  c.bufs->set_input(inputs[rank]);
  const int st = testing::start_tutti(c.mine, c.bufs->sendbuf(), c.bufs->recvbuf(), comm,
                                      call.nonblocking ? &c.request : nullptr);
  if (st != TUTTI_SUCCESS) c.result.error = str(tutti_strerror(st), ": ", tutti_last_error());
}

// Completes a request: the even ranks wait for it, the odd ones poll it
// with tutti_test, as MPI programs poll MPI_Test (a poll must progress the
// other calls in flight as a wait does). A poll that has not completed after
// kPollSeconds is a hang: reported, then waited for.
int complete(tutti_request_t* req, int rank) {
  constexpr double kPollSeconds = 120;
  if (rank % 2 == 0) return tutti_wait(req);
  const double give_up = MPI_Wtime() + kPollSeconds;
  int done = 0;
  while (!done && MPI_Wtime() < give_up) {
    const int st = tutti_test(req, &done);
    if (st != TUTTI_SUCCESS) return st;
  }
  if (done) return TUTTI_SUCCESS;
  std::fprintf(stderr, "soak: rank %d polled a request with tutti_test for %.0f s\n", rank,
               kPollSeconds);
  tutti_wait(req);
  return TUTTI_ERR_TIMEOUT;
}

// Completes `c` (waits for its request, or polls it) and checks its result.
void finish(const SoakComm& on, CheckedCall& c) {
  if (!on.comm || !c.result.error.empty()) return;
  const int rank = on.rank, nranks = on.nranks;
  for (tutti_request_t* req : {&c.request, &c.send_request}) {
    if (!*req) continue;
    const int st = complete(req, rank);
    if (st != TUTTI_SUCCESS) {
      c.result.error = str(tutti_strerror(st), ": ", tutti_last_error());
      return;
    }
  }
  if (c.call.ring) {
    const int previous = previous_rank(rank, nranks);
    for (size_t k = 0; k < c.ring_recv.size(); ++k)
      c.result.wrong += c.ring_recv[k] != ring_value(c.call, previous, k);
    return;
  }
  c.result.wrong = testing::count_wrong(c.bufs->output(), c.want, c.mine.dtype);
}

// The buffers of calls that failed: a call that timed out in the MPI
// library's own collective (`mpi`) is left to MPI, which may still write
// them (docs/RELIABILITY.md), so a failing soak keeps them to report its
// failures instead of corrupting its heap.
std::mutex g_kept_mutex;  // --soak-threads: every thread keeps its own there
std::vector<std::unique_ptr<testing::UserBuffers>> g_kept_after_failure;

void keep_if_failed(CheckedCall& c) {
  if (c.result.error.empty() || !c.bufs) return;
  const std::lock_guard<std::mutex> lock(g_kept_mutex);
  g_kept_after_failure.push_back(std::move(c.bufs));
}

CallResult run_checked(const SoakComm& on, const SoakCall& call) {
  CheckedCall c;
  c.call = call;
  start(on, c);
  finish(on, c);
  keep_if_failed(c);
  return c.result;
}

// What the calls so far got wrong, the same on every rank.
struct SoakTally {
  long wrong_elements = 0, wrong_calls = 0, failed_calls = 0;
  long ring_exchanges = 0;  // --soak-p2p
};

// What one soak (one thread's, with --soak-threads) runs on: the MPI
// communicator of all ranks its outcomes are agreed on (the world, or the
// thread's duplicate of it), and how it names itself in reports.
struct SoakLane {
  MPI_Comm agree = MPI_COMM_WORLD;
  std::string prefix;  // "" or "thread T: "
};

// Agrees on one call's outcome across the ranks and counts it; the rank
// that saw the problem reports it (`what` names the call).
void count_outcome(const SoakLane& lane, const CallResult& r, const SoakCall& call, int rank,
                   const std::string& what, SoakTally& tally) {
  long outcome[2] = {r.wrong, r.error.empty() ? 0 : 1};
  MPI_Allreduce(MPI_IN_PLACE, outcome, 2, MPI_LONG, MPI_SUM, lane.agree);
  if (!r.error.empty() || r.wrong > 0) {
    const std::string which =
        call.ring ? str("ring exchange of ", call.args.count, " int32, tag ", call.tag,
                        call.any_source ? ", received from any source" : "")
                  : str(describe(args_of_rank(call, rank)), " algorithm=",
                        call.algorithm.empty() ? "auto" : call.algorithm,
                        call.nonblocking ? " nonblocking" : "",
                        call.in_place_requested ? " in-place" : "");
    std::fprintf(stderr, "soak %s%s on rank %d: %s: %s\n", lane.prefix.c_str(), what.c_str(), rank,
                 which.c_str(),
                 r.error.empty() ? str(r.wrong, " wrong elements").c_str() : r.error.c_str());
  }
  tally.wrong_elements += outcome[0];
  if (call.ring) ++tally.ring_exchanges;
  if (outcome[0] > 0) ++tally.wrong_calls;
  if (outcome[1] > 0) ++tally.failed_calls;
}

// Every collective through every algorithm (and the dispatcher) at the
// largest size, in and out of place, blocking and not: scratch buffers,
// cached schedules, UCX's pools and the allocator's thresholds reach their
// high-water marks here, so that what grows later grows with the call
// count. Returns the number of calls; failures count as in the soak.
long warm_up(const SoakLane& lane, const SoakComm& on, uint64_t max_bytes, SoakTally& tally) {
  const int nranks = std::max(on.nranks, 1);
  long calls = 0;
  for (size_t c = 0; c < kNumCollectives; ++c) {
    SoakCall call;
    CollArgs& a = call.args;
    a.coll = kAllCollectives[c];
    a.dtype = Datatype::Float32;
    a.op = Op::Sum;
    a.root = nranks - 1;
    if (a.coll != Collective::Barrier)
      a.count = count_for_message_bytes(a.coll, max_bytes, a.dtype, nranks);
    std::vector<std::string> names{""};
    for (const algos::Algorithm* algo : algos::algorithms_for(a.coll)) names.emplace_back(algo->name);
    const bool can_be_in_place = a.coll != Collective::Bcast && a.coll != Collective::Barrier;
    for (const std::string& name : names)
      for (int variant = 0; variant < 4; ++variant) {
        call.algorithm = name;
        call.in_place_requested = can_be_in_place && (variant & 1);
        call.nonblocking = variant & 2;
        call.data_seed = static_cast<uint64_t>(++calls);
        count_outcome(lane, run_checked(on, call), call, on.rank, "warm-up", tally);
      }
  }
  return calls;
}

long max_over_ranks(const SoakLane& lane, long v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG, MPI_MAX, lane.agree);
  return v;
}

// One soak: o.soak_calls calls on `comm` and the extra communicators `o`
// asks for, drawn from `seed`. With --soak-threads each thread runs one on
// communicators of its own, at the same time as the others; the memory is
// then the process's, which the other threads' calls in flight move, so it
// is judged only where one thread runs (judge_memory).
int soak_lane(const SoakLane& lane, tutti_comm_t comm, int rank, int nranks, uint64_t seed,
              bool judge_memory, const BenchOptions& o) {
  const bool print = rank == 0;
  const char* prefix = lane.prefix.c_str();
  SharedRandom rng(seed);
  SoakComms comms(comm, lane.agree, rank, nranks);
  if (!comms.add_more(o)) return 1;
  const long rss_start = max_over_ranks(lane, resident_kib());
  // Scratch buffers and cached schedules grow until every kind of call has
  // been seen at its largest size; "warm" is measured after that point.
  const long warm_at = std::min<long>(o.soak_calls, std::max<long>(1, o.soak_calls / 10));
  // Growth is judged from the half-way call on: by then every kind of call
  // has long been seen, so what grows after it grows with the call count.
  const long half_at = std::max<long>(warm_at, o.soak_calls / 2);
  long heap_half = max_over_ranks(lane, heap_in_use_kib());
  long rss_warm = rss_start, rss_half = rss_start;
  SoakTally tally;
  std::vector<std::unique_ptr<char[]>> leaked;  // --soak-leak
  if (print)
    std::printf("# %stutti-bench --soak: %ld calls on %d ranks, sizes up to %llu bytes, seed %llu,"
                " %ld at a time, %zu communicator(s)%s%s%s\n",
                prefix, o.soak_calls, nranks, static_cast<unsigned long long>(o.max_bytes),
                static_cast<unsigned long long>(seed), o.soak_window, comms.size(),
                o.soak_split ? " (two over parts of the ranks)" : "",
                o.soak_groups ? ", half the windows grouped" : "",
                o.soak_p2p ? ", one call in eight a ring exchange" : "");
  const double t0 = MPI_Wtime();
  long warm_up_calls = 0;
  for (const SoakComm& each : comms) warm_up_calls += warm_up(lane, each, o.max_bytes, tally);
  if (print)
    std::printf("# %swarm-up: %ld calls (every algorithm at %llu bytes), resident %ld KiB\n",
                prefix, warm_up_calls, static_cast<unsigned long long>(o.max_bytes),
                max_over_ranks(lane, resident_kib()));
  else
    max_over_ranks(lane, resident_kib());
  // Calls run in windows of --soak-window: each window's calls start back
  // to back, without a synchronisation between them, the non-blocking ones
  // left in flight under the later ones (of any collective and algorithm),
  // then complete in an order that differs between ranks; only then are
  // they checked and their outcomes agreed.
  std::vector<CheckedCall> window;
  long windows = 0, churned = 0;
  for (long i = 1; i <= o.soak_calls; ++i) {
    if (window.empty()) {
      // --soak-churn: the extra communicators made anew every 16 windows.
      if (o.soak_churn && ++windows % 16 == 0) {
        comms.drop_more();
        if (!comms.add_more(o)) return 1;
        ++churned;
      }
      const long n = std::min<long>(o.soak_window, o.soak_calls - i + 1);
      window.resize(static_cast<size_t>(n));
      // --soak-groups: half the windows, drawn at random, are one group
      // (every call recorded, all started at tutti_group_end).
      const bool grouped = o.soak_groups && rng.coin();
      if (grouped && tutti_group_start() != TUTTI_SUCCESS)
        std::fprintf(stderr, "soak: tutti_group_start: %s\n", tutti_last_error());
      for (CheckedCall& c : window) {
        // The communicator first: the call is drawn for its ranks (the
        // same random numbers on every rank, whatever its size).
        if (comms.size() > 1) c.comm_index = rng.below(comms.size());
        const SoakComm& on = comms[c.comm_index];
        // --soak-p2p: one call in eight a ring exchange.
        c.call = o.soak_p2p && rng.below(8) == 0 ? draw_ring(rng)
                                                 : draw_call(rng, std::max(on.nranks, 1), o.max_bytes);
        start(on, c);
      }
      if (grouped) {
        const int st = tutti_group_end();
        if (st != TUTTI_SUCCESS)
          for (CheckedCall& c : window)
            if (c.result.error.empty())
              c.result.error = str("tutti_group_end: ", tutti_strerror(st), ": ", tutti_last_error());
      }
      for (size_t k = 0; k < window.size(); ++k) {
        CheckedCall& c = window[(k + static_cast<size_t>(rank)) % window.size()];
        finish(comms[c.comm_index], c);
      }
      std::reverse(window.begin(), window.end());  // checked from the back
    }
    CheckedCall c = std::move(window.back());
    window.pop_back();
    keep_if_failed(c);
    const SoakCall& call = c.call;
    count_outcome(lane, c.result, call, comms[c.comm_index].rank,
                  comms.size() > 1 ? str("call ", i, " on communicator ", c.comm_index)
                                   : str("call ", i),
                  tally);
    if (i == warm_at) rss_warm = max_over_ranks(lane, resident_kib());
    if (i == half_at) {
      rss_half = max_over_ranks(lane, resident_kib());
      heap_half = max_over_ranks(lane, heap_in_use_kib());
    }
    if (o.soak_leak_kib > 0 && i > half_at) {
      const size_t bytes = static_cast<size_t>(o.soak_leak_kib) << 10;
      leaked.emplace_back(new char[bytes]);
      std::memset(leaked.back().get(), 1, bytes);  // resident, not just reserved
    }
    if (i % 1000 == 0) {
      const long rss = max_over_ranks(lane, resident_kib());
      if (print)
        std::printf("# %s%ld calls, %.1f s, %ld wrong elements, %ld failed calls, resident %ld KiB\n",
                    prefix, i, MPI_Wtime() - t0, tally.wrong_elements, tally.failed_calls, rss);
    }
  }
  const long rss_end = max_over_ranks(lane, resident_kib());
  const long heap_end = max_over_ranks(lane, heap_in_use_kib());
  // Whichever grew more: the resident set, or what the program holds from
  // malloc.
  const long growth = std::max(rss_end - rss_half, heap_end - heap_half);
  const bool grew = judge_memory && growth > o.soak_max_growth_kib;
  const bool failed = tally.wrong_elements || tally.failed_calls || grew;
  if (print) {
    std::printf("# %sresident memory (largest rank): start %ld KiB, after %ld calls %ld KiB,"
                " after %ld calls %ld KiB, end %ld KiB (%+ld KiB since call %ld, limit %ld%s)\n",
                prefix, rss_start, warm_at, rss_warm, half_at, rss_half, rss_end, rss_end - rss_half,
                half_at, o.soak_max_growth_kib,
                judge_memory ? "" : ", not judged with several threads");
    std::printf("# %sheap in use (largest rank): after %ld calls %ld KiB, end %ld KiB (%+ld KiB)\n",
                prefix, half_at, heap_half, heap_end, heap_end - heap_half);
    if (grew)
      std::printf("# %smemory grew by %ld KiB in the second half, over the limit of %ld KiB\n",
                  prefix, growth, o.soak_max_growth_kib);
    if (o.soak_p2p) std::printf("# %sof which ring exchanges: %ld\n", prefix, tally.ring_exchanges);
    if (o.soak_churn) std::printf("# %scommunicators made anew %ld times\n", prefix, churned);
    std::printf("# %s%s: %ld calls in %.1f s, %ld wrong elements in %ld calls, %ld failed calls\n",
                prefix, failed ? "FAILED" : "Checked", o.soak_calls, MPI_Wtime() - t0,
                tally.wrong_elements, tally.wrong_calls, tally.failed_calls);
  }
  return failed ? 1 : 0;
}

// --soak-threads T: T soaks at once, thread t on a tutti communicator of
// its own over a duplicate of the world (as a program with a communicator
// per thread, or the torch backend's worker beside the main thread), each
// drawing its calls from its own seed. Needs MPI_THREAD_MULTIPLE.
int soak_threads(int rank, int nranks, const BenchOptions& o) {
  const int threads = static_cast<int>(o.soak_threads);
  std::vector<SoakLane> lanes(threads);
  std::vector<tutti_comm_t> comms(threads, nullptr);
  int made = 1;
  for (int t = 0; t < threads && made; ++t) {
    lanes[t].prefix = str("thread ", t, ": ");
    MPI_Comm_dup(MPI_COMM_WORLD, &lanes[t].agree);
    const int st = tutti_comm_create(lanes[t].agree, &comms[t]);
    if (st != TUTTI_SUCCESS)
      std::fprintf(stderr, "soak: tutti_comm_create: %s: %s\n", tutti_strerror(st), tutti_last_error());
    made = st == TUTTI_SUCCESS;
    MPI_Allreduce(MPI_IN_PLACE, &made, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  }
  std::vector<int> rcs(threads, made ? 0 : 1);
  if (made) {
    std::vector<std::thread> running;
    for (int t = 0; t < threads; ++t)
      running.emplace_back([&, t] {
        // Well apart: a lane draws a few numbers per call.
        const uint64_t seed = o.soak_seed + (static_cast<uint64_t>(t) << 48);
        rcs[t] = soak_lane(lanes[t], comms[t], rank, nranks, seed, false, o);
      });
    for (std::thread& each : running) each.join();
  }
  for (int t = 0; t < threads; ++t) {
    if (comms[t] && tutti_comm_destroy(comms[t]) != TUTTI_SUCCESS)
      std::fprintf(stderr, "soak: tutti_comm_destroy: %s\n", tutti_last_error());
    if (lanes[t].agree != MPI_COMM_WORLD) MPI_Comm_free(&lanes[t].agree);
  }
  const int failed = static_cast<int>(std::count(rcs.begin(), rcs.end(), 1));
  if (rank == 0)
    std::printf("# %s: %d threads, %d failed\n", failed ? "FAILED" : "Checked", threads, failed);
  return failed ? 1 : 0;
}

}  // namespace

int run_soak(tutti_comm_t comm, int rank, int nranks, const BenchOptions& o) {
  if (o.soak_threads > 1) return soak_threads(rank, nranks, o);
  return soak_lane(SoakLane{}, comm, rank, nranks, o.soak_seed, true, o);
}

}  // namespace tutti::apps
