// Every rank of a communicator must load the same tuning table: ranks given
// different TUTTI_TUNE strings or different tuning files must all fail
// tutti_comm_create with TUTTI_ERR_MISMATCH naming the ranks, a rank that
// cannot load its table must make every rank fail (with its message) rather
// than leave the others waiting, and identical tables read from different
// paths must agree. Each case sets this rank's environment before
// tutti_comm_create (which reads it). Run under mpirun with 2+ ranks.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "base/status.hpp"
#include "tutti/tutti.h"

namespace {

using tutti::str;

int me = 0, np = 1, failures = 0;

void expect(bool ok, const std::string& what) {
  int all_ok = ok;
  MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!ok) std::fprintf(stderr, "rank %d: FAILED: %s\n", me, what.c_str());
  if (!all_ok) ++failures;
  else if (me == 0) std::printf("ok: %s\n", what.c_str());
}

void set(const char* name, const std::string& value) {
  if (value.empty()) unsetenv(name);
  else setenv(name, value.c_str(), 1);
}

struct Outcome {
  int status;
  std::string error;
};

// tutti_comm_create with this rank's environment.
Outcome create(const std::string& tune, const std::string& file, const std::string& strict = "") {
  set("TUTTI_TUNE", tune);
  set("TUTTI_TUNING_FILE", file);
  set("TUTTI_TUNING_STRICT", strict);
  tutti_comm_t comm = nullptr;
  const int st = tutti_comm_create(MPI_COMM_WORLD, &comm);
  Outcome o{st, st == TUTTI_SUCCESS ? "" : tutti_last_error()};
  if (comm) tutti_comm_destroy(comm);
  set("TUTTI_TUNE", "");
  set("TUTTI_TUNING_FILE", "");
  set("TUTTI_TUNING_STRICT", "");
  return o;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string write_file(const std::string& path, const std::string& algorithm, bool with_error = false) {
  std::ofstream f(path);
  f << "[tutti]\ncluster = \"mismatch-test\"\n\n[[rule]]\ncollective = \"allreduce\"\n"
    << "bytes = \"0-\"\nalgorithm = \"" << algorithm << "\"\n";
  if (with_error) f << "\n[[rule]]\ncollective = \"bcast\"\nalgorithm = \"no_such_algorithm\"\n";
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np < 2) {
    if (me == 0) std::printf("needs 2 or more ranks\n");
    MPI_Finalize();
    return 77;
  }
  const int last = np - 1;
  // Every rank its own directory: files are per rank, as on separate nodes.
  int job = static_cast<int>(getpid());
  MPI_Bcast(&job, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string dir = str("/tmp/tutti-mismatch-", job, "-rank", me);
  const std::string mkdir = "mkdir -p " + dir;
  if (std::system(mkdir.c_str()) != 0) std::fprintf(stderr, "rank %d: cannot create %s\n", me, dir.c_str());

  {
    const Outcome o = create("allreduce:0-4K:recursive_doubling,4K-:ring", "");
    expect(o.status == TUTTI_SUCCESS, "the same TUTTI_TUNE on every rank: created (" + o.error + ")");
  }
  {
    const Outcome o = create(me == last ? "allreduce:0-:tree" : "allreduce:0-:ring", "");
    const std::string others = np == 2 ? "on rank 0" : str("on ranks 0", np == 3 ? ", " : "-", last - 1);
    expect(o.status == TUTTI_ERR_MISMATCH && contains(o.error, "ranks loaded different tuning tables") &&
               contains(o.error, str("on rank ", last)) && contains(o.error, others),
           str("TUTTI_TUNE differing on rank ", last, ": TUTTI_ERR_MISMATCH naming the ranks (", o.error, ")"));
  }
  {
    // Same content, each rank its own path: the same table.
    const std::string f = write_file(dir + "/same.toml", "ring");
    const Outcome o = create("", f);
    expect(o.status == TUTTI_SUCCESS, "identical files at per-rank paths: created (" + o.error + ")");
  }
  {
    const std::string f = write_file(dir + "/mine.toml", me == 0 ? "tree" : "ring");
    const Outcome o = create("", f);
    expect(o.status == TUTTI_ERR_MISMATCH && contains(o.error, "on rank 0") &&
               contains(o.error, np == 2 ? "on rank 1" : str("on ranks 1", np == 3 ? ", " : "-", last)),
           str("rank 0 given a different file: TUTTI_ERR_MISMATCH naming the ranks (", o.error, ")"));
  }
  {
    // TUTTI_TUNE overrides the file: the same TUTTI_TUNE over different files still differs.
    const std::string f = write_file(dir + "/mine.toml", me == 0 ? "tree" : "ring");
    const Outcome o = create("bcast:0-:tree", f);
    expect(o.status == TUTTI_ERR_MISMATCH, "the same TUTTI_TUNE over different files: mismatch (" + o.error + ")");
  }
  {
    const Outcome o = create(me == last ? "allreduce:0-:no_such_algorithm" : "allreduce:0-:ring", "");
    expect(o.status == TUTTI_ERR_INVALID_ARGUMENT &&
               contains(o.error, str("cannot load the tuning table (rank ", last, ")")) &&
               contains(o.error, "unknown algorithm 'no_such_algorithm'"),
           str("a bad TUTTI_TUNE on rank ", last, " only: every rank fails with its message (", o.error, ")"));
  }
  {
    const Outcome o = create("", me == 0 ? dir + "/missing.toml" : write_file(dir + "/same.toml", "ring"));
    expect(o.status == TUTTI_ERR_INVALID_ARGUMENT && contains(o.error, "(rank 0)") &&
               contains(o.error, "missing.toml': no such file"),
           "a missing file on rank 0 only: every rank fails, naming it (" + o.error + ")");
  }
  {
    const std::string f = write_file(dir + "/bad.toml", "ring", true);
    const Outcome strict = create("", f);
    expect(strict.status == TUTTI_ERR_INVALID_ARGUMENT && contains(strict.error, "bad.toml:11: unknown algorithm 'no_such_algorithm'"),
           "an invalid rule, strict: every rank fails (" + strict.error + ")");
    const Outcome lenient = create("", f, "0");
    expect(lenient.status == TUTTI_SUCCESS, "the same file with TUTTI_TUNING_STRICT=0: created (" + lenient.error + ")");
  }
  {
    const Outcome o = create("allreduce:0-:ring", "");
    expect(o.status == TUTTI_SUCCESS, "after the failures, a consistent table: created (" + o.error + ")");
  }
  // The cost model's machine description (TUTTI_MACHINE) is agreed on alike.
  auto machine = [&](const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
    return path;
  };
  {
    set("TUTTI_MACHINE", machine(dir + "/m.toml", "[inter]\nalpha_us = 2\n"));
    const Outcome o = create("", "");
    expect(o.status == TUTTI_SUCCESS, "the same machine description at per-rank paths: created (" + o.error + ")");
  }
  {
    set("TUTTI_MACHINE", machine(dir + "/m.toml", me == last ? "[inter]\nnics = 4\n" : "[inter]\nnics = 1\n"));
    const Outcome o = create("", "");
    expect(o.status == TUTTI_ERR_MISMATCH && contains(o.error, "ranks loaded different machine descriptions") &&
               contains(o.error, str("on rank ", last)),
           str("a different machine description on rank ", last, ": TUTTI_ERR_MISMATCH (", o.error, ")"));
  }
  {
    set("TUTTI_MACHINE", machine(dir + "/m.toml", me == 0 ? "[inter]\nspeed = 4\n" : "[inter]\nnics = 1\n"));
    const Outcome o = create("", "");
    expect(o.status == TUTTI_ERR_INVALID_ARGUMENT &&
               contains(o.error, "cannot load the machine description (rank 0)") &&
               contains(o.error, "unknown key 'inter.speed'"),
           "a bad machine description on rank 0 only: every rank fails with its message (" + o.error + ")");
  }
  set("TUTTI_MACHINE", "");

  const std::string rm = "rm -rf " + dir;
  if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "rank %d: cannot remove %s\n", me, dir.c_str());
  if (me == 0) std::printf("%d failure(s)\n", failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
