// Loads the tuning file tutti-tune wrote (TUTTI_TUNING_FILE, set by the
// caller) the way every program does, through tutti_comm_create, and checks
// that tutti now picks, for every size tutti-tune measured, the algorithm
// and chunk size the file's rule for that size names: the same call through
// the C API runs that algorithm, and the dispatcher's decision carries the
// rule's parameters. Usage: mpirun -np N tutti-tune-check MEASUREMENTS.csv
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/comm.hpp"
#include "base/status.hpp"
#include "reference.hpp"
#include "tutti/tutti.h"
#include "user_call.hpp"

namespace {

using namespace tutti;

struct Row {
  Collective coll;
  size_t count;
  uint64_t bytes;
  std::string algorithm;
  size_t chunk_bytes;
};

std::vector<Row> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(TUTTI_ERR_INVALID_ARGUMENT, "cannot read ", path);
  std::string line;
  std::getline(in, line);  // header
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    if (f.size() < 11) fail(TUTTI_ERR_INVALID_ARGUMENT, path, ": short line '", line, "'");
    if (f[9].empty()) continue;  // nothing ran at this size: no rule to check
    const auto coll = parse_collective(f[0]);
    if (!coll) fail(TUTTI_ERR_INVALID_ARGUMENT, path, ": bad collective '", f[0], "'");
    rows.push_back({*coll, std::stoul(f[2]), std::stoull(f[1]), f[9], std::stoul(f[10])});
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  int failures = 0, checked = 0;
  tutti_comm_t comm = nullptr;
  try {
    if (argc != 2) fail(TUTTI_ERR_INVALID_ARGUMENT, "usage: tutti-tune-check MEASUREMENTS.csv");
    const std::vector<Row> rows = read_csv(argv[1]);
    if (rows.empty()) fail(TUTTI_ERR_INVALID_ARGUMENT, argv[1], ": no measurements");
    if (tutti_comm_create(MPI_COMM_WORLD, &comm) != TUTTI_SUCCESS)
      fail(TUTTI_ERR_INVALID_ARGUMENT, "tutti_comm_create: ", tutti_last_error());
    Comm direct(MPI_COMM_WORLD);  // for the decision's parameters
    for (const Row& r : rows) {
      CollArgs a;
      a.coll = r.coll;
      a.count = r.count;
      a.dtype = Datatype::Float32;
      a.op = Op::Sum;
      std::vector<size_t> counts(static_cast<size_t>(p), r.count), displs(static_cast<size_t>(p));
      for (int q = 0; q < p; ++q) displs[static_cast<size_t>(q)] = r.count * static_cast<size_t>(q);
      if (r.coll == Collective::Alltoallv) {
        a.send_counts = a.recv_counts = counts;
        a.send_displs = a.recv_displs = displs;
      }
      testing::UserBuffers bufs(a, me, p);
      const int st = testing::call_tutti(a, bufs.sendbuf(), bufs.recvbuf(), comm, false);
      const std::string ran = tutti_comm_last_algorithm(comm);
      const Decision d = direct.explain(a);
      const bool ok = st == TUTTI_SUCCESS && ran == r.algorithm &&
                      d.algorithm->name == r.algorithm && d.params.chunk_bytes == r.chunk_bytes;
      ++checked;
      if (!ok) {
        ++failures;
        if (me == 0)
          std::fprintf(stderr,
                       "MISMATCH %s %llu B: file's rule says %s chunk %zu; tutti ran %s (%s), "
                       "decided %s chunk %zu (%s)\n",
                       std::string(collective_name(r.coll)).c_str(),
                       static_cast<unsigned long long>(r.bytes), r.algorithm.c_str(), r.chunk_bytes,
                       ran.c_str(), st == TUTTI_SUCCESS ? "ok" : tutti_last_error(),
                       std::string(d.algorithm->name).c_str(), d.params.chunk_bytes, d.reason.c_str());
      }
      const char* file = std::getenv("TUTTI_TUNING_FILE");
      if (!file || d.reason.rfind(str("rule ", file, ":"), 0) != 0) {
        // The rule must come from the file, not from the built-in defaults.
        ++failures;
        if (me == 0)
          std::fprintf(stderr, "NOT FROM THE FILE %s %llu B: %s\n",
                       std::string(collective_name(r.coll)).c_str(),
                       static_cast<unsigned long long>(r.bytes), d.reason.c_str());
      }
    }
  } catch (const Error& e) {
    if (me == 0) std::fprintf(stderr, "tutti-tune-check: %s\n", e.what());
    failures = failures ? failures : 1;
  }
  if (comm) tutti_comm_destroy(comm);
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0)
    std::printf("tutti-tune-check: %d sizes checked on %d ranks, %d mismatches\n", checked, p, failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
