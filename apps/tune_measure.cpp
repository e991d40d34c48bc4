#include "tune_measure.hpp"

#include <algorithm>

#include "base/status.hpp"
#include "cli.hpp"
#include "reference.hpp"
#include "user_call.hpp"

namespace tutti::apps {
namespace {

using testing::Bytes;

// One call, as the C API makes it (without its argument checks: tutti-tune
// builds valid calls, and needs to set the algorithm's parameters).
Status call(Comm& comm, const CollArgs& a, const void* in, void* out) {
  try {
    std::shared_ptr<Operation> op =
        comm.start_collective(a, in, out, MemoryType::Host, MemoryType::Host);
    return comm.wait(*op, comm.config().timeout_s);
  } catch (const Error& e) {
    return set_last_error(e.status(), e.what());
  }
}

// Steps of this rank's schedule with `params`: equal counts on every rank
// mean the parameter changes nothing at this size.
size_t schedule_steps(const algos::Algorithm& algo, const CollArgs& a, int rank,
                      const Topology& topo) {
  ScheduleBuilder b(a, rank, topo);
  algo.build(b);
  return b.finish().steps.size();
}

struct Candidate {
  const algos::Algorithm* algo;
  AlgoParams params;
};

}  // namespace

std::string candidate_label(const std::string& algorithm, const AlgoParams& params) {
  std::string out = algorithm;
  if (params.chunk_bytes) out += str(" chunk ", format_size(params.chunk_bytes));
  if (params.radix) out += str(" radix ", params.radix);
  return out;
}

uint64_t actual_message_bytes(Collective coll, uint64_t nominal, Datatype dt, int nranks) {
  CollArgs a;
  a.coll = coll;
  a.dtype = dt;
  a.count = count_for_message_bytes(coll, nominal, dt, nranks);
  if (coll == Collective::Alltoallv) return a.count * datatype_size(dt) * static_cast<size_t>(nranks);
  return message_bytes(a, nranks);
}

SizeMeasurement measure_size(Comm& comm, MPI_Comm world, Collective coll, uint64_t nominal,
                             const MeasureOptions& o, uint64_t seed) {
  const int me = comm.rank(), p = comm.size();
  SizeMeasurement m;
  CollArgs a;
  a.coll = coll;
  a.dtype = o.dtype;
  a.op = o.op;
  a.root = 0;
  a.count = count_for_message_bytes(coll, nominal, o.dtype, p);
  m.count = a.count;
  m.tuned.bytes = actual_message_bytes(coll, nominal, o.dtype, p);
  // alltoallv: the uniform layout (alltoall's, with explicit counts).
  std::vector<size_t> counts(static_cast<size_t>(p), a.count), displs(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) displs[static_cast<size_t>(r)] = a.count * static_cast<size_t>(r);
  if (coll == Collective::Alltoallv) {
    a.send_counts = a.recv_counts = counts;
    a.send_displs = a.recv_displs = displs;
    a.node_counts_exchangeable = true;  // blocking calls on host buffers
  }

  // Every rank derives every rank's input, so it knows its expected result.
  std::vector<CollArgs> per_rank(static_cast<size_t>(p), a);
  std::vector<Bytes> inputs;
  for (int q = 0; q < p; ++q) {
    const BufferShape s = buffer_shape(a, q, p);
    size_t n = coll == Collective::Bcast ? s.output_bytes : s.input_bytes;
    if ((coll == Collective::Scatter || coll == Collective::Bcast) && q != a.root) n = 0;
    inputs.push_back(testing::make_input(a, q, p, n, seed));
  }
  const Bytes want =
      coll == Collective::Barrier ? Bytes{} : testing::reference_outputs(per_rank, inputs)[static_cast<size_t>(me)];
  testing::UserBuffers timing_bufs(a, me, p);
  timing_bufs.set_input(inputs[static_cast<size_t>(me)]);

  // The candidates: every algorithm that accepts the call, times the chunk
  // sizes that change its schedule here.
  std::vector<Candidate> candidates;
  for (const algos::Algorithm* algo : algos::algorithms_for(coll)) {
    if (auto why = algo->refuse(a, comm.topology())) {
      m.skipped.push_back({std::string(algo->name), "refused: " + *why});
      continue;
    }
    if (o.chunks.empty() || !algorithm_uses_param(*algo, "chunk_bytes")) {
      candidates.push_back({algo, {}});
      continue;
    }
    std::vector<AlgoParams> variants;
    size_t previous_steps = 0;
    for (uint64_t chunk : o.chunks) {
      CollArgs with = a;
      with.params.chunk_bytes = chunk;
      size_t steps = 0;
      try {
        steps = schedule_steps(*algo, with, me, comm.topology());
      } catch (const Error&) {
        steps = 0;  // the call will fail, and say why, when it runs
      }
      int same = !variants.empty() && steps == previous_steps ? 1 : 0;
      MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, world);
      previous_steps = steps;
      if (!same) variants.push_back(with.params);
    }
    // One schedule whatever the chunk size: the algorithm's default will do.
    if (variants.size() == 1) variants[0] = {};
    for (const AlgoParams& v : variants) candidates.push_back({algo, v});
  }

  // Each candidate's result is checked once, on fresh buffers.
  std::vector<Candidate> checked;
  for (const Candidate& c : candidates) {
    const std::string label = candidate_label(std::string(c.algo->name), c.params);
    comm.force_algorithm(coll, std::string(c.algo->name));  // also drops cached plans
    CollArgs args = a;
    args.params = c.params;

    // The checked call, on fresh buffers.
    testing::UserBuffers fresh(args, me, p);
    fresh.set_input(inputs[static_cast<size_t>(me)]);
    const Status st = call(comm, args, fresh.sendbuf(), fresh.recvbuf());
    std::string error = st == TUTTI_SUCCESS ? "" : str(status_string(st), ": ", last_error());
    const bool other_algorithm = st == TUTTI_SUCCESS && comm.last_algorithm() != c.algo->name;
    long outcome[3] = {st != TUTTI_SUCCESS, other_algorithm,
                       st == TUTTI_SUCCESS && coll != Collective::Barrier
                           ? testing::count_wrong(fresh.output(), want, a.dtype)
                           : 0};
    MPI_Allreduce(MPI_IN_PLACE, outcome, 3, MPI_LONG, MPI_SUM, world);
    if (outcome[0]) {
      m.skipped.push_back({label, error.empty() ? str("failed on ", outcome[0], " rank(s)") : error});
      continue;
    }
    if (outcome[1]) {
      m.skipped.push_back({label, str("refused at run time (ran ", comm.last_algorithm(), ")")});
      continue;
    }
    if (outcome[2]) {
      m.wrong_elements += outcome[2];
      m.skipped.push_back({label, str("WRONG RESULTS: ", outcome[2], " elements differ")});
      continue;
    }

    checked.push_back(c);
  }

  // Timing: rounds over the candidates that passed, each round a warm-up and
  // a share of the iterations per candidate, so that load changes during the
  // measurement spread over all candidates; a candidate's time is the median
  // of its round medians.
  const void* in = timing_bufs.sendbuf();
  void* out = timing_bufs.recvbuf();
  const int rounds = std::max(1, o.repeats);
  const int iters_per_round = std::max(3, (o.iters + rounds - 1) / rounds);
  std::vector<std::vector<double>> round_medians(checked.size());
  std::vector<bool> dropped(checked.size(), false);
  for (int round = 0; round < rounds; ++round) {
    double best_us = 0;  // this round's best so far
    for (size_t i = 0; i < checked.size(); ++i) {
      if (dropped[i]) continue;
      const Candidate& c = checked[i];
      comm.force_algorithm(coll, std::string(c.algo->name));  // rebuilt in the warm-up
      CollArgs args = a;
      args.params = c.params;
      bool failed = false;
      for (int w = 0; w < std::max(1, o.warmup) && !failed; ++w)
        failed = call(comm, args, in, out) != TUTTI_SUCCESS;
      std::vector<double> times;
      double spent = 0;
      while (!failed && static_cast<int>(times.size()) < iters_per_round) {
        MPI_Barrier(world);
        const double t0 = MPI_Wtime();
        failed = call(comm, args, in, out) != TUTTI_SUCCESS;
        double dt = MPI_Wtime() - t0;
        // The slowest rank's time, agreed on, so every rank decides alike.
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, world);
        times.push_back(dt);
        spent += dt;
        if (times.size() >= 3 &&
            (spent > o.candidate_cap_s / rounds ||
             (best_us > 0 && median(times) * 1e6 > o.abandon_factor * best_us)))
          break;
      }
      int any_failed = failed;
      MPI_Allreduce(MPI_IN_PLACE, &any_failed, 1, MPI_INT, MPI_MAX, world);
      if (any_failed) {
        m.skipped.push_back({candidate_label(std::string(c.algo->name), c.params),
                             "failed while timed: " + std::string(last_error())});
        dropped[i] = true;
        round_medians[i].clear();
        continue;
      }
      const double us = median(times) * 1e6;
      round_medians[i].push_back(us);
      if (best_us == 0 || us < best_us) best_us = us;
      // Far behind after a full round: not worth more rounds.
      if (round == 0 && best_us > 0 && us > 2 * o.abandon_factor * best_us) dropped[i] = true;
    }
  }
  std::vector<TunedCandidate> ran;
  for (size_t i = 0; i < checked.size(); ++i)
    if (!round_medians[i].empty())
      ran.push_back({std::string(checked[i].algo->name), checked[i].params, median(round_medians[i])});
  comm.force_algorithm(coll, "");
  std::stable_sort(ran.begin(), ran.end(), [](const TunedCandidate& x, const TunedCandidate& y) {
    return x.time_us < y.time_us;
  });
  m.tuned.ranked = std::move(ran);
  return m;
}

}  // namespace tutti::apps
