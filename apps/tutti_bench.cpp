// tutti-bench: times tutti's collectives (and optionally the MPI library's
// own, interleaved on the same buffers) over a range of message sizes, in the
// spirit of nccl-tests and the OSU benchmarks. Run under mpirun or srun.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "bench_bounds.hpp"
#include "bench_options.hpp"
#include "bench_report.hpp"
#include "bench_soak.hpp"
#include "cli.hpp"
#include "reference.hpp"
#include "tutti/tutti.h"
#include "tutti_config.h"
#include "user_call.hpp"
#if TUTTI_HAVE_CUDA
#include "cuda/kernels.hpp"
#include "cuda/runtime.hpp"
#endif

namespace tutti::apps {
namespace {

using testing::Bytes;

struct Job {
  tutti_comm_t comm;
  int rank, nranks;
};

// Per-iteration times, each the slowest rank's, then the median.
double slowest_median_us(std::vector<double>& seconds) {
  MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()), MPI_DOUBLE,
                MPI_MAX, MPI_COMM_WORLD);
  return median(seconds) * 1e6;
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

// Cache-line round trips per row with --bounds: enough for a stable median,
// a fraction of a millisecond.
constexpr int kRoundTrips = 1000;
// Exchanges per row with --bounds (up to 4 KiB each).
constexpr int kExchangeTrips = 1000;
// Segments a --back-to-back stream is read in (run_size's `stream`).
constexpr int kStreamSegments = 10;
// The least a segment of a --back-to-back stream should last, and the most
// calls a stream is lengthened to for that. Why: 20 calls of 0.1 us (the
// default --iters) make segments of two calls, 0.2 us, which two clock
// reads (20-30 ns each) and a single late cache line move by 10-40%; a
// sweep at that length read 8-512 B scatter at 1.17-1.48 of Open MPI's
// time on 2 ranks, where streams of 2,000 calls read 0.89-1.01
// (2026-11-30).
constexpr double kMinSegmentSeconds = 20e-6;
constexpr int kMaxStreamCalls = 1 << 17;

// What each rank of a 2-rank call of `coll` on `bytes` hands the other:
// the whole vector for allreduce (and the root's for bcast and reduce), one
// of the two blocks for the others.
size_t bytes_handed_over(Collective coll, size_t bytes) {
  switch (coll) {
    case Collective::Allreduce:
    case Collective::Bcast:
    case Collective::Reduce: return bytes;
    default: return bytes / 2;
  }
}

BenchRow run_size(const Job& job, const BenchOptions& o, Collective coll, uint64_t bytes,
                  uint64_t seed, HardwareBounds* bounds) {
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
  // --memory cuda: the same buffers in device memory, inputs copied there.
  std::optional<testing::DeviceBuffers> device;
  if (o.memory == MemoryType::Cuda) {
    device.emplace(bufs);
    device->upload();
  }
  const void* sendbuf = device ? device->sendbuf() : bufs.sendbuf();
  void* recvbuf = device ? device->recvbuf() : bufs.recvbuf();

  // The MPI comparison runs without in-place and with sum for avg (MPI has
  // no average), on the same buffers.
  CollArgs mpi_args = a;
  if (mpi_args.op == Op::Avg) mpi_args.op = Op::Sum;

  int status = TUTTI_SUCCESS;
  auto call = [&] {
    const int st = testing::call_tutti(a, sendbuf, recvbuf, job.comm, o.nonblocking);
    if (st != TUTTI_SUCCESS && status == TUTTI_SUCCESS) {
      status = st;
      row.error = str(tutti_strerror(st), ": ", tutti_last_error());
    }
  };
  auto call_mpi = [&] {
    testing::call_mpi(mpi_args, bufs.sendbuf(), bufs.recvbuf(), MPI_COMM_WORLD);
  };

  // --check: the timed calls are checked too, each on one of three inputs
  // in turn (the same input every time could hide a result left over from
  // the call before). Every rank derives every rank's input, so it knows
  // its expected result.
  std::vector<std::pair<Bytes, Bytes>> checked_seeds;  // (my input, my expected output)
  if (o.check) {
    std::vector<CollArgs> per_rank(static_cast<size_t>(job.nranks), a);
    for (int q = 0; q < job.nranks; ++q)
      per_rank[q].in_place = o.in_place && (!has_root(coll) || q == o.root);
    for (uint64_t variant = 0; variant < 3; ++variant) {
      std::vector<Bytes> inputs;
      for (int q = 0; q < job.nranks; ++q) {
        const BufferShape s = buffer_shape(per_rank[q], q, job.nranks);
        size_t n = coll == Collective::Bcast ? s.output_bytes : s.input_bytes;
        if (coll == Collective::Scatter && q != o.root) n = 0;
        inputs.push_back(testing::make_input(per_rank[q], q, job.nranks, n, seed + variant * 7919));
      }
      Bytes want = testing::reference_outputs(per_rank, inputs)[job.rank];
      checked_seeds.emplace_back(std::move(inputs[job.rank]), std::move(want));
    }
  }
  long timed_wrong = 0;
  // Before timed call i: its input. After: its result, counted.
  auto prepare_checked = [&](int i) {
    if (!o.check) return;
    bufs.set_input(checked_seeds[i % 3].first);
    if (device) device->upload();
  };
  auto count_checked = [&](int i) {
    if (!o.check || status != TUTTI_SUCCESS) return;
    if (device) device->download();
    if (buffer_shape(a, job.rank, job.nranks).has_output)
      timed_wrong += testing::count_wrong(bufs.output(), checked_seeds[i % 3].second, a.dtype);
  };

  if (bounds) bounds->prepare_copy(row.bytes);
  double quickest_warmup = HUGE_VAL;
  for (int i = 0; i < o.warmup; ++i) {
    const double t0 = MPI_Wtime();
    call();
    if (o.compare_mpi) call_mpi();
    quickest_warmup = std::min(quickest_warmup, MPI_Wtime() - t0);
    if (bounds) bounds->timed_copy();
  }
  // --back-to-back: calls per stream, at least --iters, and enough for
  // segments of kMinSegmentSeconds at the pace of the quickest warm-up
  // call (the first ones build schedules and fault pages in), the slowest
  // rank's, so that every rank makes the same number of calls; tutti and
  // the MPI library make the same number too.
  int stream_calls = o.iters;
  if (o.back_to_back && o.warmup > 0) {
    MPI_Allreduce(MPI_IN_PLACE, &quickest_warmup, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const double per_call = quickest_warmup / (o.compare_mpi ? 2 : 1);
    const double wanted = kStreamSegments * kMinSegmentSeconds / std::max(per_call, 1e-9);
    stream_calls = static_cast<int>(std::clamp(wanted, static_cast<double>(o.iters),
                                               static_cast<double>(std::max(o.iters, kMaxStreamCalls))));
  }
  std::vector<double> tutti_s, mpi_s, copy_s;
  // Seconds per call of `batch` back-to-back calls, after a barrier.
  auto timed = [&o](auto&& once) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int k = 0; k < o.batch; ++k) once();
    return (MPI_Wtime() - t0) / o.batch;
  };
  // --back-to-back: one barrier, then the --iters calls as one stream, read
  // as kStreamSegments segments of consecutive calls (fewer when there are
  // fewer calls): per segment its seconds per call. Why segments and not
  // each call's own time: a loop of calls that only one way (bcast,
  // scatter, gather, reduce) runs as a pipeline, its root some calls ahead,
  // so single calls alternate between quick ones and ones that wait for
  // the pipeline, and their median is not the loop's time per call. On 2
  // ranks, 8-byte scatters back to back took 0.100 us by the median of
  // single calls against Open MPI's 0.070, and 0.067 against 0.074-0.084 by
  // the stream's time (docs/perf/b2b-stream-vs-single-2026-11-30.txt); a
  // clock read after every call also slowed both sides' streams. The median
  // over segments still drops a segment that a descheduling hit.
  auto stream = [stream_calls](auto&& once, std::vector<double>& seconds) {
    const int segments = std::min(stream_calls, kStreamSegments);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int s = 0, done = 0; s < segments; ++s) {
      const int end = static_cast<int>(static_cast<long>(stream_calls) * (s + 1) / segments);
      for (int i = done; i < end; ++i) once();
      const double now = MPI_Wtime();
      seconds.push_back((now - start) / (end - done));
      start = now;
      done = end;
    }
  };
  if (o.back_to_back) {
    // The stream's calls run on one input (resetting it between calls would
    // break the stream); its last result is checked, before MPI's calls.
    prepare_checked(0);
    stream(call, tutti_s);
    if (!a.in_place) count_checked(0);
    if (o.compare_mpi) stream(call_mpi, mpi_s);
  } else {
    for (int i = 0; i < o.iters; ++i) {
      prepare_checked(i);
      tutti_s.push_back(timed(call));
      count_checked(i);
      if (o.compare_mpi) mpi_s.push_back(timed(call_mpi));
      if (bounds) copy_s.push_back(bounds->timed_copy());
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

  if (bounds) {
    row.copy_us = slowest_median_us(copy_s);
    row.round_trip_us = bounds->round_trip_us(kRoundTrips);
    const size_t handed = bytes_handed_over(coll, row.bytes);
    row.exchange_us = bounds->exchange_us(handed, kExchangeTrips);
  }

  if (o.check) {
    // And one more call on fresh buffers, as a first call sees them.
    testing::UserBuffers fresh(a, job.rank, job.nranks);
    fresh.set_input(input);
    int st = TUTTI_SUCCESS;
    if (o.memory == MemoryType::Cuda) {
      // Results copied back to the host for the comparison.
      testing::DeviceBuffers fresh_device(fresh);
      fresh_device.upload();
      st = testing::call_tutti(a, fresh_device.sendbuf(), fresh_device.recvbuf(), job.comm,
                               o.nonblocking);
      fresh_device.download();
    } else {
      st = testing::call_tutti(a, fresh.sendbuf(), fresh.recvbuf(), job.comm, o.nonblocking);
    }
    const Bytes& want = checked_seeds.front().second;
    long wrong = timed_wrong + (st == TUTTI_SUCCESS
                                    ? testing::count_wrong(fresh.output(), want, a.dtype)
                                    : static_cast<long>(want.size() / es + 1));
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

#if TUTTI_HAVE_CUDA
// Median of `iters` timings of `batch` back-to-back launches each, in us per
// launch, on tutti's stream (where the kernels run inside collectives).
template <typename Launch>
double time_on_stream(cudaStream_t stream, int warmup, int iters, Launch&& launch) {
  cudaEvent_t start = nullptr, stop = nullptr;
  cuda::check(cudaEventCreate(&start), "cudaEventCreate");
  cuda::check(cudaEventCreate(&stop), "cudaEventCreate");
  constexpr int kBatch = 10;
  for (int i = 0; i < warmup; ++i) launch();
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    cuda::check(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int b = 0; b < kBatch; ++b) launch();
    cuda::check(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda::check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    cuda::check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    us.push_back(static_cast<double>(ms) * 1e3 / kBatch);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(us);
}

// --op reduce-kernel: dst = a op b by tutti's kernel, against a device-to-
// device copy of the same size, on rank 0's GPU (the other ranks wait, so
// ranks sharing a GPU do not disturb the measurement). Bandwidth counts
// every byte read and written: 3 x SIZE for the kernel, 2 x SIZE for the copy.
void reduce_kernel_table(const BenchOptions& o) {
  if (!cuda::available()) fail(TUTTI_ERR_UNSUPPORTED, "--op reduce-kernel: no CUDA device is available");
  const int dev = cuda::current_device();
  const cuda::DeviceProps& props = cuda::device_props(dev);
  const unsigned sms = static_cast<unsigned>(props.sm_count);
  const size_t es = datatype_size(o.dtype);
  std::printf("# tutti-bench --op reduce-kernel: %s (sm_%d%d, %d SMs), float32-sum grid up to "
              "%u x %u threads, dtype %s, redop %s, iters %d x 10, warmup %d\n",
              props.name.c_str(), props.cc_major, props.cc_minor, props.sm_count,
              cuda::reduce_grid_blocks(size_t{1} << 30, sms), cuda::kThreadsPerBlock, std::string(datatype_name(o.dtype)).c_str(),
              std::string(op_name(o.redop)).c_str(), o.iters, o.warmup);
  std::printf("# GB/s counts bytes read + written: kernel 3 x size, copy 2 x size\n");
  const bool csv = o.format == Format::Csv;
  std::printf(csv ? "bytes,count,kernel_us,kernel_gbps,copy_us,copy_gbps,ratio\n"
                  : "%12s %12s %12s %12s %12s %12s %8s\n",
              "bytes", "count", "kernel_us", "kernel_GB/s", "copy_us", "copy_GB/s", "ratio");
  struct DeviceBuffer {
    char* p = nullptr;
    explicit DeviceBuffer(size_t bytes) { cuda::check(cudaMalloc(&p, bytes), "cudaMalloc"); }
    ~DeviceBuffer() { cudaFree(p); }
  };
  const size_t max = std::max<size_t>(static_cast<size_t>(o.max_bytes) / es * es, es);
  DeviceBuffer a(max), b(max), d(max);
  // Small integers: finite in every datatype, no denormals.
  cuda::check(cudaMemset(a.p, 0x01, max), "cudaMemset");
  cuda::check(cudaMemset(b.p, 0x02, max), "cudaMemset");
  cudaStream_t stream = cuda::stream();
  for (double x = static_cast<double>(o.min_bytes); x <= static_cast<double>(o.max_bytes) * 1.0001;
       x *= o.step_factor) {
    const size_t count = static_cast<size_t>(std::llround(x)) / es;
    if (count == 0) continue;
    const size_t bytes = count * es;
    cuda::ReduceLaunch l;
    l.out0 = d.p;
    l.a = a.p;
    l.b = b.p;
    l.count = count;
    l.type = static_cast<cuda::ElemType>(o.dtype);
    l.op = static_cast<cuda::ReduceKind>(o.redop == Op::Avg ? Op::Sum : o.redop);
    const double kernel_us = time_on_stream(stream, o.warmup, o.iters, [&] {
      cuda::check(static_cast<cudaError_t>(cuda::enqueue_reduce(l, stream, sms)),
                  "the reduction kernel");
    });
    const double copy_us = time_on_stream(stream, o.warmup, o.iters, [&] {
      cuda::check(cudaMemcpyAsync(d.p, a.p, bytes, cudaMemcpyDeviceToDevice, stream),
                  "cudaMemcpyAsync");
    });
    const double kernel_gbps = 3.0 * static_cast<double>(bytes) / kernel_us / 1e3;
    const double copy_gbps = 2.0 * static_cast<double>(bytes) / copy_us / 1e3;
    std::printf(csv ? "%zu,%zu,%.2f,%.1f,%.2f,%.1f,%.3f\n"
                    : "%12zu %12zu %12.2f %12.1f %12.2f %12.1f %7.1f%%\n",
                bytes, count, kernel_us, kernel_gbps, copy_us, copy_gbps,
                csv ? kernel_gbps / copy_gbps : 100 * kernel_gbps / copy_gbps);
  }
}

int run_reduce_kernel(const Job& job, const BenchOptions& o) {
  int rc = 0;
  if (job.rank == 0) {
    try {
      reduce_kernel_table(o);
    } catch (const Error& e) {
      std::fprintf(stderr, "tutti-bench: %s\n", e.what());
      rc = 2;
    }
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}
#endif

int run(const Job& job, const BenchOptions& o) {
  if (o.root >= job.nranks)
    fail(TUTTI_ERR_INVALID_ARGUMENT, "--root ", o.root, " is out of range for ", job.nranks, " ranks");
#if TUTTI_HAVE_CUDA
  if (o.reduce_kernel) return run_reduce_kernel(job, o);
  if (o.memory == MemoryType::Cuda) {
    if (!cuda::available()) fail(TUTTI_ERR_UNSUPPORTED, "--memory cuda: no CUDA device is available");
    // The MPI library here need not be CUDA-aware.
    if (o.compare_mpi) fail(TUTTI_ERR_UNSUPPORTED, "--compare-mpi needs --memory host");
  }
#else
  if (o.reduce_kernel || o.memory != MemoryType::Host)
    fail(TUTTI_ERR_UNSUPPORTED, o.reduce_kernel ? "--op reduce-kernel" : "--memory cuda",
         ": this tutti-bench was built without CUDA support");
#endif
  const bool print = job.rank == 0;
  BenchReport report(o.format, o.compare_mpi, o.bounds);
  std::optional<HardwareBounds> bounds;
  if (o.bounds) {
    if (o.memory != MemoryType::Host) fail(TUTTI_ERR_UNSUPPORTED, "--bounds needs --memory host");
    bounds.emplace(MPI_COMM_WORLD);
  }
  if (print) {
    report.header(str("tutti-bench ", tutti_version(), ": ", job.nranks, " ranks, dtype ",
                      datatype_name(o.dtype), ", redop ", op_name(o.redop), ", iters ", o.iters,
                      o.batch > 1 ? str(" x batch ", o.batch) : std::string(), ", warmup ",
                      o.warmup, o.in_place ? ", in place" : "",
                      o.memory == MemoryType::Cuda ? ", CUDA device buffers" : "",
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
      const BenchRow row = run_size(job, o, coll, bytes, ++seed, bounds ? &*bounds : nullptr);
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

#if TUTTI_HAVE_CUDA
// --memory cuda: each rank of a node takes its own GPU (local rank modulo
// the node's GPUs), before the communicator is made, as a CUDA-aware MPI
// program would; tutti's buffers, kernels and stream then live on it.
void select_device_by_local_rank(int rank) {
  if (!cuda::available()) return;  // run() says so
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  int devices = 0;
  cuda::check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  cuda::check(cudaSetDevice(local % devices), "cudaSetDevice");
}
#endif

}  // namespace
}  // namespace tutti::apps

int main(int argc, char** argv) {
  // Options first: only --soak-threads asks for MPI_THREAD_MULTIPLE (Open
  // MPI's own collectives, which tutti-bench compares with, are slower
  // with it). Rank 0 reports bad options once MPI says who is rank 0.
  tutti::apps::BenchOptions options;
  std::string bad_options;
  try {
    options = tutti::apps::parse_bench_options(argc, argv);
  } catch (const tutti::Error& e) {
    bad_options = e.what();
  }
  int provided = MPI_THREAD_SINGLE;
  if (options.soak_threads > 1)
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  else
    MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (options.help || !bad_options.empty()) {
    if (rank == 0 && options.help) tutti::apps::print_bench_usage();
    if (rank == 0 && !options.help) std::fprintf(stderr, "tutti-bench: %s\n", bad_options.c_str());
    MPI_Finalize();
    return options.help ? 0 : 2;
  }
  int rc = 0;
  tutti_comm_t comm = nullptr;
  try {
    if (options.soak_threads > 1 && provided < MPI_THREAD_MULTIPLE)
      throw tutti::Error(TUTTI_ERR_UNSUPPORTED,
                         "--soak-threads: the MPI library does not provide MPI_THREAD_MULTIPLE");
#if TUTTI_HAVE_CUDA
    if (options.memory == tutti::MemoryType::Cuda) tutti::apps::select_device_by_local_rank(rank);
#endif
    if (tutti_comm_create(MPI_COMM_WORLD, &comm) != TUTTI_SUCCESS)
      throw tutti::Error(TUTTI_ERR_INTERNAL, tutti::str("tutti_comm_create: ", tutti_last_error()));
    rc = options.soak_calls > 0 ? tutti::apps::run_soak(comm, rank, nranks, options)
                                : tutti::apps::run({comm, rank, nranks}, options);
  } catch (const tutti::Error& e) {
    if (rank == 0) std::fprintf(stderr, "tutti-bench: %s\n", e.what());
    rc = 2;
  }
  if (comm) tutti_comm_destroy(comm);
  MPI_Finalize();
  return rc;
}
