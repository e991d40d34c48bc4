// libtutti-mpi's policy (lib/interpose/policy.*) on its own, under mpirun:
// the trials run as one block of calls on tutti, then one on the MPI library
// (a back-to-back program is timed at its back-to-back rate), warm-up calls
// are not counted, each side's run is timed from its first timed call's
// start to its last one's end, and every rank keeps the side that the
// slowest rank's times favour, even when its own times say otherwise.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "interpose/policy.hpp"

using tutti::interpose::Coll;
using tutti::interpose::Policy;

namespace {

int checks = 0, failed = 0;

void check(bool ok, const char* what, int call = -1) {
  ++checks;
  if (ok) return;
  ++failed;
  std::printf("FAIL: %s (call %d)\n", what, call);
}

const char* name(Policy::Side s) { return s == Policy::Side::mpi ? "mpi" : "tutti"; }

// Runs the trials of one class, the times of each call given by `seconds`,
// and checks the order of the sides on the way.
void run_trials(Policy& policy, Coll coll, size_t bytes, int trials,
                double (*seconds)(Policy::Side side, bool timed, int rank), int rank) {
  check(Policy::timed_per_side(bytes) == trials, "timed calls per side by size");
  double clock = 0;  // this rank's time: each call starts where the last ended
  for (int call = 0; call < 2 + 2 * trials; ++call) {
    const Policy::Choice c = policy.choose(coll, bytes);
    const Policy::Side expected = call <= trials ? Policy::Side::tutti : Policy::Side::mpi;
    check(c.trial, "a call during the trials is a trial", call);
    check(c.side == expected, "tutti's block of trials comes first, then MPI's", call);
    const bool timed = call != 0 && call != trials + 1;
    check(Policy::trial_is_timed(call, trials) == timed, "the first call of each side is a warm-up",
          call);
    check(c.starts_run == (call == 1 || call == trials + 2),
          "each side's first timed call starts its run", call);
    const double start = clock;
    clock += seconds(c.side, timed, rank);
    policy.record(c, start, clock, MPI_COMM_WORLD);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Read once by the policy, before its first use.
  setenv("TUTTI_MPI_TRIALS", "3", 1);
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int trials = tutti::interpose::trials_per_side();
  check(trials == 3, "TUTTI_MPI_TRIALS is read");
  // Small calls get more timed calls (they are cheap, and noisier).
  const int small = Policy::kSmallFactor * trials;
  check(Policy::timed_per_side(Policy::kSmallBytes - 1) == small &&
            Policy::timed_per_side(Policy::kSmallBytes) == trials,
        "more timed calls below kSmallBytes");

  Policy policy;
  // MPI faster by the slowest rank's times, though rank 0 alone sees tutti
  // faster; warm-ups cost 100 s on MPI's side and must not count.
  check(policy.decided(Coll::bcast, 8) == Policy::Side::tutti, "tutti until decided");
  run_trials(policy, Coll::bcast, 8, small,
             [](Policy::Side side, bool timed, int r) {
               if (!timed) return side == Policy::Side::mpi ? 100.0 : 0.0;
               if (side == Policy::Side::tutti) return r == 0 ? 0.01 : 1.0;
               return 0.5;
             },
             rank);
  const Policy::Choice after = policy.choose(Coll::bcast, 8);
  check(!after.trial, "no trial after the decision");
  const Policy::Side want = size > 1 ? Policy::Side::mpi : Policy::Side::tutti;
  check(after.side == want, "the slowest rank's times decide");
  if (after.side != want) std::printf("  got %s, want %s\n", name(after.side), name(want));
  check(policy.decided(Coll::bcast, 12) == want, "non-blocking calls of the class follow");

  // The decision is tried again after kFirstRetrial calls (`after` above was
  // the first), then after 4x as many: here tutti has become the faster
  // side everywhere.
  bool early = false;
  for (uint32_t call = 2; call < Policy::kFirstRetrial; ++call)
    early = early || policy.choose(Coll::bcast, 8).trial;
  check(!early, "no trial before kFirstRetrial calls");
  run_trials(policy, Coll::bcast, 8, small,
             [](Policy::Side side, bool, int) { return side == Policy::Side::tutti ? 0.1 : 0.2; },
             rank);
  check(policy.choose(Coll::bcast, 8).side == Policy::Side::tutti &&
            policy.decided(Coll::bcast, 8) == Policy::Side::tutti,
        "the re-trial's decision holds");
  // (The check above made the first call since that decision.)
  uint32_t calls = 1;
  while (calls < 4 * Policy::kFirstRetrial && !policy.choose(Coll::bcast, 8).trial) ++calls;
  check(calls + 1 == 4 * Policy::kFirstRetrial, "the next re-trial comes 4x later");
  // Meanwhile non-blocking calls keep the side decided before.
  check(policy.decided(Coll::bcast, 8) == Policy::Side::tutti, "the old side during a re-trial");

  // tutti faster; another size class and collective are undecided still.
  check(policy.choose(Coll::bcast, 1 << 20).trial, "another size class has its own trials");
  run_trials(policy, Coll::allreduce, 1 << 20, trials,
             [](Policy::Side side, bool, int) { return side == Policy::Side::tutti ? 0.1 : 0.2; },
             rank);
  check(policy.choose(Coll::allreduce, 1 << 20).side == Policy::Side::tutti, "tutti faster: tutti");
  // alltoallv: classed by the size the ranks agree on (each rank's differs):
  // the first call agrees on the smallest of every rank's, here 1000 B.
  size_t agreed = 0;
  check(policy.agree_alltoallv_bytes(1000 * static_cast<size_t>(rank + 1), MPI_COMM_WORLD, agreed) &&
            agreed == 1000 && policy.alltoallv_agreed_bytes() == 1000,
        "alltoallv: the first call agrees on the smallest size of any rank");
  run_trials(policy, Coll::alltoallv, agreed, small,
             [](Policy::Side side, bool, int) { return side == Policy::Side::mpi ? 0.1 : 0.2; },
             rank);
  check(policy.choose(Coll::alltoallv, 1000).side == Policy::Side::mpi &&
            policy.decided(Coll::alltoallv, 1000) == Policy::Side::mpi,
        "alltoallv: the agreed size's class decided");
  check(policy.choose(Coll::alltoallv, 1 << 20).trial, "alltoallv: another size, another class");
  // Between agreements the agreed size holds, whatever this rank's own; an
  // agreement takes the smallest size of its window (calls 2-3), and 2
  // calls after a change it agrees again (call 5).
  check(policy.agree_alltoallv_bytes(1 << 20, MPI_COMM_WORLD, agreed) && agreed == 1000,
        "alltoallv: the agreed size holds between agreements (call 2)");
  check(policy.agree_alltoallv_bytes(2000, MPI_COMM_WORLD, agreed) && agreed == 2000,
        "alltoallv: an agreement takes the smallest size since the last (call 3)");
  check(policy.agree_alltoallv_bytes(1 << 20, MPI_COMM_WORLD, agreed) && agreed == 2000,
        "alltoallv: no agreement on call 4");
  check(policy.agree_alltoallv_bytes(1 << 20, MPI_COMM_WORLD, agreed) && agreed == 1 << 20,
        "alltoallv: 2 calls after a change it agrees again (call 5)");

  // A barrier before a run that failed on one rank: its times mean
  // nothing, and every rank keeps tutti though MPI's times are lower.
  {
    double clock = 0;
    for (int call = 0; call < 2 + 2 * small; ++call) {
      const Policy::Choice c = policy.choose(Coll::gather, 8);
      const double start = clock;
      clock += c.side == Policy::Side::mpi ? 0.1 : 0.2;
      policy.record(c, start, clock, MPI_COMM_WORLD, rank == size - 1 && call == small + 2);
    }
    check(policy.choose(Coll::gather, 8).side == Policy::Side::tutti,
          "a failed barrier on one rank: tutti everywhere");
  }

  int all_failed = 0;
  MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("policy: %d checks, %d failed (all ranks: %d)\n", checks, failed, all_failed);
  MPI_Finalize();
  return all_failed == 0 ? 0 : 1;
}
