// Everything tutti reads from the environment, parsed and checked once per
// communicator (at tutti_comm_create) into one typed value that is passed
// down, rather than read from globals on the hot path.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "base/types.hpp"

namespace tutti {

enum class TransportKind { Ucx, Mpi };

struct DebugFlags {
  bool calls = false;      // every collective: algorithm and time (rank 0)
  bool decisions = false;  // dispatcher choices, once per (collective, size bucket)
  bool transport = false;  // transport set-up details
  bool any() const { return calls || decisions || transport; }
};

struct Config {
  TransportKind transport = TransportKind::Ucx;
  // TUTTI_TIMEOUT: seconds a blocking call may wait; 0 = forever.
  double timeout_s = TUTTI_DEFAULT_TIMEOUT_S;
  // TUTTI_SPIN: idle progress polls before a waiting rank yields its core.
  int spin_before_yield = 200;
  bool spin_set = false;  // TUTTI_SPIN was given
  // TUTTI_SLEEP_AFTER: microseconds a wait may go without progress before
  // it sleeps between polls instead of yielding; 0 = never. A thread that
  // only yields keeps being scheduled beside the threads that compute.
  double sleep_after_us = 0;
  bool sleep_set = false;  // TUTTI_SLEEP_AFTER was given
  // What waits yielding at once (oversubscribed nodes) use unless it was.
  static constexpr double kSharedCoresSleepAfterUs = TUTTI_SHARED_CORES_SLEEP_AFTER_US;
  // The MPI launcher asks ranks to yield when idle (Open MPI's
  // OMPI_MCA_mpi_yield_when_idle=1): tutti's waits yield at once too.
  bool launcher_yields = false;
  // TUTTI_ALGO_<COLLECTIVE>: forced algorithm per collective ("" = none).
  std::array<std::string, kNumCollectives> forced;
  std::string tune;         // TUTTI_TUNE: inline tuning rules
  std::string tuning_file;  // TUTTI_TUNING_FILE
  std::string machine_file; // TUTTI_MACHINE: the cost model's machine description
  bool tuning_strict = true;  // TUTTI_TUNING_STRICT
  DebugFlags debug;         // TUTTI_DEBUG
  bool check = false;       // TUTTI_CHECK: agree on call signatures first
  std::string trace_prefix; // TUTTI_TRACE
  // TUTTI_SHM_BYTES: data bytes of a single-node communicator's shared
  // segment; -1 = the default (node/node_memory.hpp), 0 = none.
  long long shm_bytes = -1;
  // TUTTI_SHM_STREAM: whether the shared-memory algorithms write their
  // slots with non-temporal stores; nullopt ("auto"): each rank decides
  // from what it measures (node/slot_writes.hpp).
  std::optional<bool> shm_stream;
  // TUTTI_CMA: ranks of one node may read each other's buffers with
  // cross-memory attach (node/peer_memory.hpp); 0 turns it off.
  bool cma = true;
  // TUTTI_READS: whether rules with reads=fast/slow take peer reads as the
  // faster way inside a node; nullopt ("auto"): measured at creation
  // (node/read_probe.hpp).
  std::optional<bool> fast_reads;
  // TUTTI_FOLLOW_STATE: blocking calls whose rule names an alternative
  // probe both now and then and run the faster (api/state_choice.hpp).
  // `alternate` (for tests): every agreement switches to the other. The
  // order matters: the ranks agree on the lowest (Comm).
  enum class FollowState : int { off = 0, on = 1, alternate = 2 };
  FollowState follow_state = FollowState::off;
  // TUTTI_GROUP_FUSE_BYTES: grouped allreduces of at most this many bytes
  // are fused with others of their datatype and op (0: never).
  size_t group_fuse_bytes = 256 * 1024;
  // TUTTI_UCX_PEER_ERRORS: UCX detects dead peers (UCX 1.13: over TCP only).
  bool ucx_peer_errors = false;

  // Reads the environment. Throws Error(TUTTI_ERR_INVALID_ARGUMENT) naming the
  // variable and the accepted values for anything it cannot parse.
  static Config from_environment(bool have_ucx);
};

// "TUTTI_ALGO_REDUCE_SCATTER" for Collective::ReduceScatter.
std::string algo_env_name(Collective c);

}  // namespace tutti
