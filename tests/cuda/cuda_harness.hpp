// Shared pieces of the GPU tests: the communicator, agreement across ranks,
// and one collective run on device buffers checked against the host
// reference.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "engine/coll_args.hpp"
#include "tutti/tutti.h"

namespace tutti::testing {

void set_world(tutti_comm_t comm);
tutti_comm_t world();
int world_rank();
int world_size();
// True on every rank iff `ok` is true on every rank.
bool all_ranks(bool ok);
// The same message on every rank: the lowest failing rank's ("" if none).
std::string agree(const std::string& local);

// Where the call's buffers live.
struct Placement {
  bool device_send = true;
  bool device_recv = true;
  size_t offset = 0;  // bytes past cudaMalloc's alignment
};

// Runs `args` through the C API on buffers placed as `where`, with inputs
// from make_input, and checks every rank's output against the reference.
// Returns "" or what went wrong on the lowest failing rank (on every rank).
std::string check_on_device(CollArgs args, uint64_t seed, Placement where, bool nonblocking);

#define CUDA_REQUIRE(call) REQUIRE((call) == cudaSuccess)

}  // namespace tutti::testing
