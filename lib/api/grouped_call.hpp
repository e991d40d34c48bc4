// One call made between tutti_group_start and tutti_group_end, validated and
// recorded by the API layer, started by Comm::start_group at the group's end.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "engine/coll_args.hpp"
#include "base/types.hpp"

namespace tutti {

struct GroupedCall {
  enum class Kind { Collective, EmptyCollective, Send, Receive };
  Kind kind = Kind::Collective;
  // Collectives: as for Comm::start_collective. alltoallv's count arrays are
  // copied into `vcounts` (send counts, send displacements, receive counts,
  // receive displacements): the caller's may be gone when the group ends.
  CollArgs args;
  std::array<std::vector<size_t>, 4> vcounts;
  const void* in = nullptr;
  void* out = nullptr;
  MemoryType in_mem = MemoryType::Host, out_mem = MemoryType::Host;
  // Point-to-point: as for Comm::start_point_to_point.
  void* buf = nullptr;
  size_t bytes = 0;
  int peer = -1, tag = -1;
  MemoryType mem = MemoryType::Host;
  int* source = nullptr;  // a receive: where to report the sender's rank

  // Points args' alltoallv spans at `vcounts`; Comm::start_grouped does it
  // just before the call starts, whatever copies or moves came before.
  void own_counts() {
    if (args.coll != Collective::Alltoallv || kind != Kind::Collective) return;
    args.send_counts = vcounts[0];
    args.send_displs = vcounts[1];
    args.recv_counts = vcounts[2];
    args.recv_displs = vcounts[3];
  }
};

}  // namespace tutti
