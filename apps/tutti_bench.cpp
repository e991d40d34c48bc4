// tutti-bench: times tutti's collectives (and optionally the MPI library's
// own, interleaved on the same buffers) over a range of message sizes, in the
// spirit of nccl-tests and the OSU benchmarks. Run under mpirun or srun.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench_options.hpp"
#include "bench_report.hpp"
#include "reference.hpp"
#include "status.hpp"
#include "tutti/tutti.h"
#include "user_call.hpp"

namespace tutti::apps {
namespace {

using testing::Bytes;

struct Job {
  tutti_comm_t comm;
  int rank, nranks;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Per-iteration times, each the slowest rank's, then the median.
double slowest_median_us(std::vector<double>& seconds) {
  MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()), MPI_DOUBLE,
                MPI_MAX, MPI_COMM_WORLD);
  return median(seconds) * 1e6;
}

long count_wrong(const Bytes& got, const Bytes& want, Datatype dt) {
  const size_t es = datatype_size(dt);
  if (got.size() != want.size()) return static_cast<long>(std::max(got.size(), want.size()) / es);
  long wrong = 0;
  for (size_t i = 0; i < got.size(); i += es)
    if (std::memcmp(got.data() + i, want.data() + i, es) != 0) ++wrong;
  return wrong;
}

// Uniform alltoallv layout: like alltoall, with explicit counts.
struct UniformV {
  std::vector<size_t> counts, displs;
  UniformV(size_t count, int nranks) {
    for (int r = 0; r < nranks; ++r) {
      counts.push_back(count);
      displs.push_back(count * static_cast<size_t>(r));
    }
  }
};

BenchRow run_size(const Job& job, const BenchOptions& o, Collective coll, uint64_t bytes,
                  uint64_t seed) {
  const size_t es = datatype_size(o.dtype);
  CollArgs a;
  a.coll = coll;
  a.count = count_for_message_bytes(coll, bytes, o.dtype, job.nranks);
  a.dtype = o.dtype;
  a.op = o.redop;
  a.root = o.root;
  a.in_place = o.in_place && coll != Collective::Bcast && coll != Collective::Barrier &&
               (!has_root(coll) || job.rank == o.root);
  const UniformV uniform(a.count, job.nranks);
  if (coll == Collective::Alltoallv) {
    a.send_counts = a.recv_counts = uniform.counts;
    a.send_displs = a.recv_displs = uniform.displs;
  }

  BenchRow row;
  row.collective = std::string(collective_name(coll));
  row.bytes = coll == Collective::Barrier ? 0 : message_bytes(a, job.nranks);
  row.count = a.count;
  row.dtype = std::string(datatype_name(o.dtype));
  row.redop = is_reduction(coll) ? std::string(op_name(o.redop)) : "none";
  row.root = has_root(coll) ? o.root : -1;

  testing::UserBuffers bufs(a, job.rank, job.nranks);
  const BufferShape shape = buffer_shape(a, job.rank, job.nranks);
  const Bytes input = testing::make_input(
      a, job.rank, job.nranks, coll == Collective::Bcast ? shape.output_bytes : shape.input_bytes,
      seed);
  bufs.set_input(input);

  // The MPI comparison runs without in-place and with sum for avg (MPI has
  // no average), on the same buffers.
  CollArgs mpi_args = a;
  if (mpi_args.op == Op::Avg) mpi_args.op = Op::Sum;

  int status = TUTTI_SUCCESS;
  auto call = [&] {
    const int st = testing::call_tutti(a, bufs.sendbuf(), bufs.recvbuf(), job.comm, o.nonblocking);
    if (st != TUTTI_SUCCESS && status == TUTTI_SUCCESS) {
      status = st;
      row.error = str(tutti_strerror(st), ": ", tutti_last_error());
    }
  };
  auto call_mpi = [&] {
    testing::call_mpi(mpi_args, bufs.sendbuf(), bufs.recvbuf(), MPI_COMM_WORLD);
  };

  for (int i = 0; i < o.warmup; ++i) {
    call();
    if (o.compare_mpi) call_mpi();
  }
  std::vector<double> tutti_s, mpi_s;
  for (int i = 0; i < o.iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    call();
    tutti_s.push_back(MPI_Wtime() - t0);
    if (o.compare_mpi) {
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      call_mpi();
      mpi_s.push_back(MPI_Wtime() - t0);
    }
  }
  row.algorithm = tutti_comm_last_algorithm(job.comm);
  row.time_us = slowest_median_us(tutti_s);
  const double factor = busbw_factor(coll, job.nranks);
  if (row.time_us > 0) {
    row.algbw = static_cast<double>(row.bytes) / row.time_us / 1e3;
    row.busbw = row.algbw * factor;
  }
  if (o.compare_mpi) {
    row.mpi_time_us = slowest_median_us(mpi_s);
    row.mpi_busbw = *row.mpi_time_us > 0
                        ? static_cast<double>(row.bytes) / *row.mpi_time_us / 1e3 * factor
                        : 0;
  }

  if (o.check) {
    // Every rank derives every rank's input, so it knows its expected result.
    std::vector<CollArgs> per_rank(static_cast<size_t>(job.nranks), a);
    std::vector<Bytes> inputs;
    for (int q = 0; q < job.nranks; ++q) {
      per_rank[q].in_place = o.in_place && (!has_root(coll) || q == o.root);
      const BufferShape s = buffer_shape(per_rank[q], q, job.nranks);
      size_t n = coll == Collective::Bcast ? s.output_bytes : s.input_bytes;
      if (coll == Collective::Scatter && q != o.root) n = 0;
      inputs.push_back(testing::make_input(per_rank[q], q, job.nranks, n, seed));
    }
    const Bytes want = testing::reference_outputs(per_rank, inputs)[job.rank];
    testing::UserBuffers fresh(a, job.rank, job.nranks);
    fresh.set_input(input);
    const int st = testing::call_tutti(a, fresh.sendbuf(), fresh.recvbuf(), job.comm, o.nonblocking);
    long wrong = st == TUTTI_SUCCESS ? count_wrong(fresh.output(), want, a.dtype)
                                     : static_cast<long>(want.size() / es + 1);
    if (st != TUTTI_SUCCESS && row.error.empty())
      row.error = str(tutti_strerror(st), ": ", tutti_last_error());
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    row.wrong = wrong;
  }
  int failed = status != TUTTI_SUCCESS, any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_failed && row.error.empty()) row.error = "failed on another rank";
  return row;
}

int run(const Job& job, const BenchOptions& o) {
  if (o.root >= job.nranks)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "--root ", o.root, " is out of range for ", job.nranks, " ranks");
  if (o.memory != MemoryType::Host)
    fail(TUTTI_ERR_UNSUPPORTED, "--memory cuda: this tutti-bench was built without CUDA support");
  const bool print = job.rank == 0;
  BenchReport report(o.format, o.compare_mpi);
  if (print) {
    report.header(str("tutti-bench ", tutti_version(), ": ", job.nranks, " ranks, dtype ",
                      datatype_name(o.dtype), ", redop ", op_name(o.redop), ", iters ", o.iters,
                      ", warmup ", o.warmup, o.in_place ? ", in place" : "",
                      o.check ? ", checked" : ""));
  }
  long total_wrong = 0;
  bool any_error = false;
  uint64_t seed = 12345;
  for (Collective coll : o.collectives) {
    const std::string name(collective_name(coll));
    if (tutti_comm_force_algorithm(job.comm, name.c_str(), o.algorithm.c_str()) != TUTTI_SUCCESS) {
      if (o.collectives.size() == 1) fail(TUTTI_ERR_INVALID_ARGUMENT, tutti_last_error());
      continue;  // --op all: this collective has no such algorithm
    }
    std::vector<uint64_t> sizes;
    if (coll == Collective::Barrier) {
      sizes = {0};
    } else {
      for (double b = static_cast<double>(o.min_bytes); b <= static_cast<double>(o.max_bytes) * 1.0001;
           b *= o.step_factor)
        sizes.push_back(static_cast<uint64_t>(std::llround(b)));
    }
    for (uint64_t bytes : sizes) {
      if (coll != Collective::Barrier && count_for_message_bytes(coll, bytes, o.dtype, job.nranks) == 0) continue;
      const BenchRow row = run_size(job, o, coll, bytes, ++seed);
      if (row.wrong > 0) total_wrong += row.wrong;
      any_error = any_error || !row.error.empty();
      if (print) report.row(row);
    }
    tutti_comm_force_algorithm(job.comm, name.c_str(), nullptr);
  }
  if (print) {
    report.footer();
    if (o.check && o.format == Format::Table)
      std::printf("# %s: %ld wrong elements\n", total_wrong ? "FAILED" : "Checked", total_wrong);
  }
  return total_wrong > 0 || any_error ? 1 : 0;
}

}  // namespace
}  // namespace tutti::apps

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int rc = 0;
  tutti_comm_t comm = nullptr;
  try {
    const tutti::apps::BenchOptions options =
        tutti::apps::parse_bench_options(argc, argv, rank == 0);
    if (tutti_comm_create(MPI_COMM_WORLD, &comm) != TUTTI_SUCCESS)
      throw tutti::Error(TUTTI_ERR_INTERNAL, tutti::str("tutti_comm_create: ", tutti_last_error()));
    rc = tutti::apps::run({comm, rank, nranks}, options);
  } catch (const tutti::Error& e) {
    if (rank == 0) std::fprintf(stderr, "tutti-bench: %s\n", e.what());
    rc = 2;
  }
  if (comm) tutti_comm_destroy(comm);
  MPI_Finalize();
  return rc;
}
