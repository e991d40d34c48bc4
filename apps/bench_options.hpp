// tutti-bench's command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/types.hpp"

namespace tutti::apps {

enum class Format { Table, Csv, Json };

struct BenchOptions {
  std::vector<Collective> collectives = {Collective::Allreduce};
  Datatype dtype = Datatype::Float32;
  Op redop = Op::Sum;
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 64ull << 20;
  double step_factor = 2;
  int iters = 20;
  int warmup = 5;
  // Calls per timed sample: 1 times each call alone after a barrier (the
  // slowest rank, so barrier exit skew is included); K > 1 times K
  // back-to-back calls and divides, as the OSU benchmarks do, which is the
  // per-call latency of a loop of calls.
  int batch = 1;
  // --back-to-back: the timed calls run one after another with no barrier
  // between them (all of tutti's, then all of MPI's); each call's time is
  // from the end of the one before.
  bool back_to_back = false;
  std::string algorithm;  // forced for every collective; "" = dispatcher
  int root = 0;
  bool in_place = false;
  bool check = false;
  bool compare_mpi = false;
  // --bounds: time a concurrent copy of each size and a cache-line round
  // trip in the same job (apps/bench_bounds.hpp).
  bool bounds = false;
  bool nonblocking = false;
  Format format = Format::Table;
  MemoryType memory = MemoryType::Host;
  // --op reduce-kernel: time tutti's CUDA reduction kernel alone (no
  // communication) against a device-to-device copy, instead of collectives.
  bool reduce_kernel = false;
  // --soak N: N checked calls of random collectives instead of a size sweep
  // (sizes up to max_bytes, 1 MiB unless --max-bytes is given).
  long soak_calls = 0;
  uint64_t soak_seed = 1;
  // --soak-window W: the soak's calls start W at a time back to back, the
  // non-blocking ones in flight together, and are checked after all W.
  long soak_window = 1;
  // --soak-comms K: the soak's calls go to K communicators over the same
  // ranks, each call's drawn at random.
  long soak_comms = 1;
  // --soak-split: two more communicators over parts of the ranks: one per
  // parity of the rank, and every rank but the last.
  bool soak_split = false;
  // --soak-churn: the soak's extra communicators (--soak-comms, --soak-split)
  // are destroyed and made anew every 16 windows.
  bool soak_churn = false;
  // --soak-threads T: T soaks at once, each thread on communicators of its
  // own (needs MPI_THREAD_MULTIPLE: tutti-bench asks for it then).
  long soak_threads = 1;
  // --soak-groups: half the soak's windows run as one group each.
  bool soak_groups = false;
  // --soak-p2p: one soak call in eight is a ring exchange (tutti_isend /
  // tutti_irecv, from any source in half of them).
  bool soak_p2p = false;
  // The soak fails when the largest rank's resident memory at the end
  // exceeds that at the half-way call by more than this (KiB).
  long soak_max_growth_kib = 4096;
  // Testing the growth check: each call of the second half leaks this much
  // (touched) memory on purpose.
  long soak_leak_kib = 0;
  bool help = false;  // --help: print the usage and stop
};

// Parses argv (before MPI_Init: the options decide the thread level it asks
// for). Throws Error on bad input; --help ends parsing with `help` set.
BenchOptions parse_bench_options(int argc, char** argv);
void print_bench_usage();

}  // namespace tutti::apps
