// Runs one collective for every rank of a virtual job inside this process:
// each rank builds its schedule with the algorithm under test, and the real
// engine executes all of them over the simulated network.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algos/registry.hpp"
#include "reference.hpp"
#include "transport/sim.hpp"

namespace tutti::testing {

struct SimOptions {
  SimNetwork::Mode mode = SimNetwork::Mode::Rendezvous;
  bool check_hazards = true;  // find_round_hazards on every rank's schedule
  // Data bytes of each simulated node's shared segment (0: none). Small, so
  // that the shared-memory algorithms run many chunks even on small vectors.
  size_t shared_bytes = 16 * 1024;
  // The ranks of a node may read each other's buffers (cross-memory
  // attach; TUTTI_CMA=0 or a kernel that forbids it: not).
  bool peer_reads = true;
  // Ranks write their slots with non-temporal stores, or not
  // (TUTTI_SHM_STREAM=1/0); nullopt: each rank decides (node/slot_writes.hpp).
  std::optional<bool> shm_streaming = false;
  // Each rank on a thread of its own, as real ranks run concurrently (the
  // ThreadSanitizer test); a deadlock is then reported after this many
  // seconds instead of being detected exactly.
  bool threaded = false;
  double threaded_deadline_s = 60;
  // The node of every rank; empty: one node. A job of several nodes has no
  // shared segment (the shared-memory algorithms refuse it), as on a cluster.
  std::vector<int> node_of_rank;
};

// The communicator shape the ranks of a simulated job see.
Topology sim_topology(int nranks, const SimOptions& options);

struct SimOutcome {
  std::vector<Bytes> outputs;  // per rank; empty where not significant
  std::string error;           // empty on success
  size_t max_rounds = 0;
  size_t messages = 0;
};

// args[r] are rank r's arguments; inputs[r] its input buffer (bcast: the
// root's output buffer at entry). In-place calls place the input inside the
// output as the C API does.
SimOutcome run_in_sim(const algos::Algorithm& algo, const std::vector<CollArgs>& args,
                      const std::vector<Bytes>& inputs, const SimOptions& options = {});

// One collective of a sequence: as for run_in_sim.
struct SimCall {
  const algos::Algorithm* algo;
  std::vector<CollArgs> args;
  std::vector<Bytes> inputs;
};

// Runs `calls` one after another on every rank of one job (one network, one
// shared segment, each rank starting its next call as soon as its last one
// finished), as a program calls collectives in a row. Returns one outcome
// per call; on failure the first outcome holds the error.
std::vector<SimOutcome> run_sequence_in_sim(const std::vector<SimCall>& calls,
                                            const SimOptions& options = {});

}  // namespace tutti::testing
