// tutti-tune's measurement of one (collective, message size): every
// eligible algorithm of the registry (the MPI library's own collective
// included) and, for algorithms whose schedules depend on it, every chunk
// size asked for; each checked against the reference result once, then
// timed with tutti-bench's method (warm-up, barrier before each iteration,
// the slowest rank's time per iteration, median), in interleaved rounds whose
// medians are combined by their median.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "api/comm.hpp"
#include "tuning/write.hpp"

namespace tutti::apps {

struct MeasureOptions {
  Datatype dtype = Datatype::Float32;
  Op op = Op::Sum;
  int iters = 100;  // timed iterations per candidate (at most), over all rounds
  int repeats = 3;  // rounds over the candidates; time = median of round medians
  int warmup = 3;   // untimed calls first (the checked call is one)
  // A candidate stops early after at least 3 iterations once it has used
  // this much time, or once its median is this many times the best's.
  double candidate_cap_s = 0.2;
  double abandon_factor = 2.0;
  std::vector<uint64_t> chunks = {64 << 10, 256 << 10, 1 << 20};
};

struct Skipped {
  std::string candidate, why;  // refused, failed, or wrong results
};

struct SizeMeasurement {
  TunedSize tuned;  // bytes and the candidates that ran correctly, fastest first
  size_t count = 0;
  std::vector<Skipped> skipped;
  long wrong_elements = 0;  // over all candidates and ranks: a bug if not 0
};

// Collective over `world` (the communicator `comm` was made from). Every
// rank returns the same result (times are agreed on before any choice).
// nominal_bytes is rounded down to whole elements per rank; the result's
// bytes are what the dispatcher will match on.
SizeMeasurement measure_size(Comm& comm, MPI_Comm world, Collective coll, uint64_t nominal_bytes,
                             const MeasureOptions& options, uint64_t seed);

// The size the dispatcher matches a call of `nominal_bytes` on (0 if the
// call would have no elements).
uint64_t actual_message_bytes(Collective coll, uint64_t nominal_bytes, Datatype dt, int nranks);

// "ring chunk 64K"
std::string candidate_label(const std::string& algorithm, const AlgoParams& params);

}  // namespace tutti::apps
