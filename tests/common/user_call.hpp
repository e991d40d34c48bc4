// How a user lays out buffers for, and calls, any collective through the C
// API (or the MPI library's own collective), in place or not. Shared by the
// mpirun tests and tutti-bench so both exercise exactly what users do.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/coll_args.hpp"
#include "reference.hpp"
#include "tutti/tutti.h"

namespace tutti::testing {

class UserBuffers {
 public:
  // Buffers for rank `rank`'s part of the call `a` (alltoallv counts must be
  // attached to `a`). Receive buffers start filled with `fill`.
  UserBuffers(const CollArgs& a, int rank, int nranks, char fill = 0x5a);
  // Puts this rank's input where the call reads it (in place: inside the
  // receive buffer; bcast: the root's buffer).
  void set_input(const Bytes& input);
  // This rank's result (empty where it has none).
  Bytes output() const;

  const void* sendbuf() const { return sendbuf_; }
  void* recvbuf() const { return recvbuf_; }
  // Raw pointers to the data, for calls that need them without in-place
  // sentinels (the MPI comparison).
  void* send_data() { return send_.data(); }
  void* recv_data() { return recv_.data(); }

 private:
  friend class DeviceBuffers;
  CollArgs a_;
  int rank_, nranks_;
  BufferShape shape_;
  Bytes send_, recv_;
  const void* sendbuf_ = nullptr;
  void* recvbuf_ = nullptr;
};

// A UserBuffers' buffers mirrored in CUDA device memory: same sizes, same
// TUTTI_IN_PLACE and NULL arguments, each buffer `offset` bytes past
// cudaMalloc's alignment (to test misaligned pointers). With device_send or
// device_recv false that buffer stays the host one (mixed calls). Where tutti
// is built without CUDA the constructor throws Error(TUTTI_ERR_UNSUPPORTED).
class DeviceBuffers {
 public:
  explicit DeviceBuffers(UserBuffers& host, size_t offset = 0, bool device_send = true,
                         bool device_recv = true);
  ~DeviceBuffers();
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;

  void upload();    // the host buffers' contents to the device (after set_input)
  void download();  // and back (then host.output() is the device result)
  const void* sendbuf() const { return sendbuf_; }
  void* recvbuf() const { return recvbuf_; }

 private:
  UserBuffers& host_;
  char* send_base_ = nullptr;  // cudaMalloc'd, or null
  char* recv_base_ = nullptr;
  char* send_ = nullptr;  // where the data is (device or host)
  char* recv_ = nullptr;
  const void* sendbuf_ = nullptr;
  void* recvbuf_ = nullptr;
};

// Calls the collective through tutti's C API: blocking, or non-blocking
// followed by tutti_wait.
int call_tutti(const CollArgs& a, const void* sendbuf, void* recvbuf, tutti_comm_t comm,
               bool nonblocking);
// Makes the call without waiting for it: the blocking form where req is
// null, else the non-blocking one (*req to be completed by the caller).
int start_tutti(const CollArgs& a, const void* sendbuf, void* recvbuf, tutti_comm_t comm,
                tutti_request_t* req);

// Calls the MPI library's own blocking collective with the same buffers
// (TUTTI_IN_PLACE becomes MPI_IN_PLACE; avg is timed as sum; fp16/bf16
// reductions use tutti's MPI user ops). Returns an MPI error code.
int call_mpi(const CollArgs& a, const void* sendbuf, void* recvbuf, MPI_Comm comm);

// Whether a call on `comm` ran the algorithm forced for it: made before the
// call, asked after it. A refusal falls back to another algorithm silently
// (counted in tutti_comm_stats), so a forced sweep that does not ask would
// check another algorithm's result. Where `refusal_expected`, the forced
// algorithm must have refused the call (one refused fallback) and another
// run it. A call with nothing to move runs no algorithm ("none", tutti.h).
class ForcedRunCheck {
 public:
  ForcedRunCheck(tutti_comm_t comm, const std::string& forced, bool refusal_expected);
  // "" or what ran instead.
  std::string after(const CollArgs& args) const;

 private:
  tutti_comm_t comm_;
  std::string forced_;
  bool refusal_expected_;
  uint64_t refused_before_ = 0;
};

}  // namespace tutti::testing
