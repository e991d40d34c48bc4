// An MPI benchmark that knows nothing of tutti, for libtutti-mpi's "with or
// without" comparison (scripts/compare-interpose.sh runs it both ways in
// interleaved jobs). Prints one CSV row per collective and size: the median
// over iterations of the slowest rank's time per call, in microseconds.
//
//   mpi_only_bench [--method barrier|b2b] [--max-bytes N] [--iters N]
//                  [--collectives allreduce,bcast,...]
//   mpi_only_bench --overhead   time per call of 8-byte calls on MPI_COMM_SELF
//                               (what the interposition layer itself costs)
//
// barrier: a barrier before every call, each call timed alone; b2b: calls
// back to back, the batch timed and divided.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string method = "barrier";
  size_t max_bytes = 64u << 20;
  int iters = 0;  // 0: by size
  std::string collectives =
      "allreduce,reduce,bcast,allgather,reduce_scatter,alltoall,alltoallv,gather,scatter,barrier";
  bool overhead = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--method") o.method = next();
    else if (a == "--max-bytes") o.max_bytes = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--iters") o.iters = std::atoi(next().c_str());
    else if (a == "--collectives") o.collectives = next();
    else if (a == "--overhead") o.overhead = true;
    else { std::fprintf(stderr, "mpi_only_bench: unknown option %s\n", a.c_str()); std::exit(2); }
  }
  return o;
}

int iterations_for(size_t bytes, int forced) {
  if (forced > 0) return forced;
  if (bytes <= 64 << 10) return 200;
  if (bytes <= 1 << 20) return 50;
  return 10;
}

// Median over iterations of the slowest rank's time, in microseconds.
// The warm-up (half the iterations, at least 16 calls) outlasts, at the
// default iterations, libtutti-mpi's trials of a new size class (interpose/policy.hpp: 33 calls
// per side below 16 KiB, 5 above), so the timed calls see the side the
// trials chose, as a program's later calls of that size do. Before
// 2026-11-29 it was a tenth: the 10 timed calls of a 2-16 MiB cell then
// included up to 8 trial calls, half of them on the slower side.
double time_calls(const Options& o, int iters, const std::function<void()>& call) {
  for (int w = 0; w < std::max(16, iters / 2); ++w) call();
  std::vector<double> times;
  if (o.method == "b2b") {
    // Several batches, each of `iters` calls back to back.
    for (int batch = 0; batch < 5; ++batch) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i) call();
      times.push_back((MPI_Wtime() - t0) / iters);
    }
  } else {
    for (int i = 0; i < iters; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      call();
      times.push_back(MPI_Wtime() - t0);
    }
  }
  std::vector<double> slowest(times.size());
  MPI_Allreduce(times.data(), slowest.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);
  std::nth_element(slowest.begin(), slowest.begin() + slowest.size() / 2, slowest.end());
  return slowest[slowest.size() / 2] * 1e6;
}

void overhead() {
  // One rank's communicator: the MPI library answers in tens of ns, so the
  // layer's own cost shows.
  double x = 1, y = 0;
  const int n = 2000000;
  for (int round = 0; round < 3; ++round) {
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; ++i) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
    const double allreduce_ns = (MPI_Wtime() - t0) / n * 1e9;
    t0 = MPI_Wtime();
    for (int i = 0; i < n; ++i) MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_SELF);
    const double bcast_ns = (MPI_Wtime() - t0) / n * 1e9;
    std::printf("overhead,round %d,allreduce_self_ns,%.1f,bcast_self_ns,%.1f\n", round, allreduce_ns, bcast_ns);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const Options o = parse(argc, argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (o.overhead) {
    if (rank == 0) overhead();
    MPI_Finalize();
    return 0;
  }
  // Buffers made once, for the largest size, and touched: no page faults in the timing.
  const size_t per_rank_max = o.max_bytes;
  std::vector<char> send(per_rank_max * size, 1), recv(per_rank_max * size, 2);
  MPI_Comm comm = MPI_COMM_WORLD;
  if (rank == 0) std::printf("collective,bytes,method,ranks,time_us\n");
  auto wanted = [&](const char* name) {
    return ("," + o.collectives + ",").find(std::string(",") + name + ",") != std::string::npos;
  };
  for (size_t bytes = 8; bytes <= o.max_bytes; bytes *= 8) {
    const int iters = iterations_for(bytes, o.iters);
    const int floats = static_cast<int>(bytes / sizeof(float));
    const int nbytes = static_cast<int>(bytes);
    // alltoallv: alltoall's blocks, by counts and displacements.
    std::vector<int> counts(static_cast<size_t>(size), nbytes), displs(static_cast<size_t>(size));
    for (int q = 0; q < size; ++q) displs[static_cast<size_t>(q)] = q * nbytes;
    struct Case {
      const char* name;
      std::function<void()> call;
    };
    const std::vector<Case> cases = {
        {"allreduce", [&] { MPI_Allreduce(send.data(), recv.data(), floats, MPI_FLOAT, MPI_SUM, comm); }},
        {"reduce", [&] { MPI_Reduce(send.data(), recv.data(), floats, MPI_FLOAT, MPI_SUM, 0, comm); }},
        {"bcast", [&] { MPI_Bcast(send.data(), nbytes, MPI_BYTE, 0, comm); }},
        {"allgather", [&] { MPI_Allgather(send.data(), nbytes, MPI_BYTE, recv.data(), nbytes, MPI_BYTE, comm); }},
        {"reduce_scatter", [&] { MPI_Reduce_scatter_block(send.data(), recv.data(), floats, MPI_FLOAT, MPI_SUM, comm); }},
        {"alltoall", [&] { MPI_Alltoall(send.data(), nbytes, MPI_BYTE, recv.data(), nbytes, MPI_BYTE, comm); }},
        {"gather", [&] { MPI_Gather(send.data(), nbytes, MPI_BYTE, recv.data(), nbytes, MPI_BYTE, 0, comm); }},
        {"scatter", [&] { MPI_Scatter(send.data(), nbytes, MPI_BYTE, recv.data(), nbytes, MPI_BYTE, 0, comm); }},
        {"alltoallv", [&] {
           MPI_Alltoallv(send.data(), counts.data(), displs.data(), MPI_BYTE, recv.data(),
                         counts.data(), displs.data(), MPI_BYTE, comm);
         }},
    };
    for (const Case& c : cases) {
      if (!wanted(c.name)) continue;
      const double us = time_calls(o, iters, c.call);
      if (rank == 0) std::printf("%s,%zu,%s,%d,%.3f\n", c.name, bytes, o.method.c_str(), size, us);
    }
    if (bytes == 8 && wanted("barrier")) {
      const double us = time_calls(o, 200, [&] { MPI_Barrier(comm); });
      if (rank == 0) std::printf("barrier,0,%s,%d,%.3f\n", o.method.c_str(), size, us);
    }
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
