#include "user_call.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include "base/status.hpp"
#include "transport/mpi_types.hpp"
#include "tutti_config.h"
#if TUTTI_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace tutti::testing {

UserBuffers::UserBuffers(const CollArgs& a, int rank, int nranks, char fill)
    : a_(a), rank_(rank), nranks_(nranks), shape_(buffer_shape(a, rank, nranks)) {
  switch (a.coll) {
    case Collective::Barrier: break;
    case Collective::Bcast:
      recv_ = Bytes(shape_.output_bytes, fill);
      recvbuf_ = recv_.data();
      break;
    case Collective::Scatter:
      if (rank == a.root) {
        send_ = Bytes(shape_.input_bytes, 0);
        sendbuf_ = send_.data();
      }
      if (a.in_place) {
        recvbuf_ = TUTTI_IN_PLACE;
      } else {
        recv_ = Bytes(shape_.output_bytes, fill);
        recvbuf_ = recv_.data();
      }
      break;
    default:
      if (shape_.has_output) {
        // In place, the receive buffer also holds the (possibly larger) input.
        recv_ = Bytes(std::max(shape_.output_bytes, a.in_place ? shape_.input_bytes : 0),
                      a.coll == Collective::Alltoallv ? 0 : fill);
        recvbuf_ = recv_.data();
      }  // else: not significant on this rank; pass NULL as users may
      if (a.in_place) {
        sendbuf_ = TUTTI_IN_PLACE;
      } else {
        send_ = Bytes(shape_.input_bytes, 0);
        sendbuf_ = send_.data();
      }
  }
}

void UserBuffers::set_input(const Bytes& input) {
  if (a_.coll == Collective::Barrier) return;
  if (a_.coll == Collective::Bcast) {
    if (rank_ == a_.root) std::copy(input.begin(), input.end(), recv_.begin());
    return;
  }
  if (a_.in_place && a_.coll != Collective::Scatter) {
    const InPlaceLayout where = in_place_layout(a_, rank_);
    std::copy(input.begin(), input.end(), recv_.begin() + static_cast<long>(where.offset));
  } else if (!send_.empty()) {
    std::copy(input.begin(), input.end(), send_.begin());
  }
}

Bytes UserBuffers::output() const {
  if (!shape_.has_output) return {};
  if (a_.coll == Collective::Scatter && a_.in_place) {
    const size_t off = in_place_layout(a_, rank_).offset;
    return Bytes(send_.begin() + static_cast<long>(off),
                 send_.begin() + static_cast<long>(off + shape_.output_bytes));
  }
  Bytes out = recv_;
  out.resize(shape_.output_bytes);
  return out;
}

#if TUTTI_HAVE_CUDA
namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(TUTTI_ERR_INTERNAL, what, ": ", cudaGetErrorString(e));
}

// A device copy of `bytes` bytes, `offset` bytes into its allocation.
char* device_copy(size_t bytes, size_t offset, char*& base) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, bytes + offset + 16), "cudaMalloc");
  base = static_cast<char*>(p);
  return base + offset;
}

}  // namespace

DeviceBuffers::DeviceBuffers(UserBuffers& host, size_t offset, bool device_send, bool device_recv)
    : host_(host) {
  send_ = host.send_.data();
  recv_ = host.recv_.data();
  if (device_send && !host.send_.empty()) send_ = device_copy(host.send_.size(), offset, send_base_);
  if (device_recv && !host.recv_.empty()) recv_ = device_copy(host.recv_.size(), offset, recv_base_);
  // The same arguments, pointing into the mirrors.
  auto map = [&](const void* p) -> char* {
    if (!p || p == TUTTI_IN_PLACE) return static_cast<char*>(const_cast<void*>(p));
    const char* c = static_cast<const char*>(p);
    const char* s = host.send_.data();
    const char* r = host.recv_.data();
    if (c >= s && c <= s + host.send_.size()) return send_ + (c - s);
    return recv_ + (c - r);
  };
  sendbuf_ = map(host.sendbuf_);
  recvbuf_ = map(host.recvbuf_);
}

DeviceBuffers::~DeviceBuffers() {
  cudaFree(send_base_);
  cudaFree(recv_base_);
}

void DeviceBuffers::upload() {
  if (send_base_) check_cuda(cudaMemcpy(send_, host_.send_.data(), host_.send_.size(), cudaMemcpyHostToDevice), "upload");
  if (recv_base_) check_cuda(cudaMemcpy(recv_, host_.recv_.data(), host_.recv_.size(), cudaMemcpyHostToDevice), "upload");
  // cudaMemcpy from pageable memory may return before the data has reached
  // the device: the buffers are ready only after a synchronisation (the rule
  // docs/CUDA.md gives users).
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

void DeviceBuffers::download() {
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (send_base_) check_cuda(cudaMemcpy(host_.send_.data(), send_, host_.send_.size(), cudaMemcpyDeviceToHost), "download");
  if (recv_base_) check_cuda(cudaMemcpy(host_.recv_.data(), recv_, host_.recv_.size(), cudaMemcpyDeviceToHost), "download");
}
#else
DeviceBuffers::DeviceBuffers(UserBuffers& host, size_t, bool, bool) : host_(host) {
  fail(TUTTI_ERR_UNSUPPORTED, "device buffers: tutti was built without CUDA support");
}
DeviceBuffers::~DeviceBuffers() = default;
void DeviceBuffers::upload() {}
void DeviceBuffers::download() {}
#endif

int call_tutti(const CollArgs& a, const void* s, void* r, tutti_comm_t c, bool nb) {
  tutti_request_t req = nullptr;
  int st = start_tutti(a, s, r, c, nb ? &req : nullptr);
  if (st == TUTTI_SUCCESS && nb) st = tutti_wait(&req);
  return st;
}

int start_tutti(const CollArgs& a, const void* s, void* r, tutti_comm_t c, tutti_request_t* rp) {
  const auto dt = static_cast<tutti_datatype_t>(a.dtype);
  const auto op = static_cast<tutti_op_t>(a.op);
  const bool nb = rp != nullptr;
  int st = TUTTI_SUCCESS;
  switch (a.coll) {
    case Collective::Allreduce:
      st = nb ? tutti_iallreduce(s, r, a.count, dt, op, c, rp)
              : tutti_allreduce(s, r, a.count, dt, op, c);
      break;
    case Collective::Reduce:
      st = nb ? tutti_ireduce(s, r, a.count, dt, op, a.root, c, rp)
              : tutti_reduce(s, r, a.count, dt, op, a.root, c);
      break;
    case Collective::Bcast:
      st = nb ? tutti_ibcast(r, a.count, dt, a.root, c, rp) : tutti_bcast(r, a.count, dt, a.root, c);
      break;
    case Collective::Allgather:
      st = nb ? tutti_iallgather(s, r, a.count, dt, c, rp) : tutti_allgather(s, r, a.count, dt, c);
      break;
    case Collective::ReduceScatter:
      st = nb ? tutti_ireduce_scatter(s, r, a.count, dt, op, c, rp)
              : tutti_reduce_scatter(s, r, a.count, dt, op, c);
      break;
    case Collective::Gather:
      st = nb ? tutti_igather(s, r, a.count, dt, a.root, c, rp)
              : tutti_gather(s, r, a.count, dt, a.root, c);
      break;
    case Collective::Scatter:
      st = nb ? tutti_iscatter(s, r, a.count, dt, a.root, c, rp)
              : tutti_scatter(s, r, a.count, dt, a.root, c);
      break;
    case Collective::Alltoall:
      st = nb ? tutti_ialltoall(s, r, a.count, dt, c, rp) : tutti_alltoall(s, r, a.count, dt, c);
      break;
    case Collective::Alltoallv: {
      const size_t *sc = a.send_counts.data(), *sd = a.send_displs.data();
      const size_t *rc = a.recv_counts.data(), *rd = a.recv_displs.data();
      st = nb ? tutti_ialltoallv(s, sc, sd, r, rc, rd, dt, c, rp)
              : tutti_alltoallv(s, sc, sd, r, rc, rd, dt, c);
      break;
    }
    case Collective::Barrier: st = nb ? tutti_ibarrier(c, rp) : tutti_barrier(c); break;
  }
  return st;
}

int call_mpi(const CollArgs& a, const void* s, void* r, MPI_Comm comm) {
  const MPI_Datatype dt = mpi_datatype(a.dtype);
  const MPI_Op op = is_reduction(a.coll) ? mpi_op(a.op, a.dtype) : MPI_OP_NULL;
  if (a.count > static_cast<size_t>(INT_MAX)) return MPI_ERR_COUNT;
  const int n = static_cast<int>(a.count);
  const void* send = s == TUTTI_IN_PLACE ? MPI_IN_PLACE : s;
  void* recv = r == TUTTI_IN_PLACE ? MPI_IN_PLACE : r;
  switch (a.coll) {
    case Collective::Allreduce: return MPI_Allreduce(send, recv, n, dt, op, comm);
    case Collective::Reduce: return MPI_Reduce(send, recv, n, dt, op, a.root, comm);
    case Collective::Bcast: return MPI_Bcast(recv, n, dt, a.root, comm);
    case Collective::Allgather: return MPI_Allgather(send, n, dt, recv, n, dt, comm);
    case Collective::ReduceScatter: return MPI_Reduce_scatter_block(send, recv, n, dt, op, comm);
    case Collective::Gather: return MPI_Gather(send, n, dt, recv, n, dt, a.root, comm);
    case Collective::Scatter: return MPI_Scatter(send, n, dt, recv, n, dt, a.root, comm);
    case Collective::Alltoall: return MPI_Alltoall(send, n, dt, recv, n, dt, comm);
    case Collective::Alltoallv: {
      std::vector<int> sc, sd, rc, rd;
      for (size_t i = 0; i < a.recv_counts.size(); ++i) {
        sc.push_back(static_cast<int>(a.send_counts[i]));
        sd.push_back(static_cast<int>(a.send_displs[i]));
        rc.push_back(static_cast<int>(a.recv_counts[i]));
        rd.push_back(static_cast<int>(a.recv_displs[i]));
      }
      return MPI_Alltoallv(send, sc.data(), sd.data(), dt, recv, rc.data(), rd.data(), dt, comm);
    }
    case Collective::Barrier: return MPI_Barrier(comm);
  }
  return MPI_ERR_OTHER;
}

ForcedRunCheck::ForcedRunCheck(tutti_comm_t comm, const std::string& forced,
                               bool refusal_expected)
    : comm_(comm), forced_(forced), refusal_expected_(refusal_expected) {
  tutti_comm_stats_t stats{};
  tutti_comm_stats(comm_, &stats);
  refused_before_ = stats.refused_fallbacks;
}

std::string ForcedRunCheck::after(const CollArgs& args) const {
  tutti_comm_stats_t stats{};
  tutti_comm_stats(comm_, &stats);
  const uint64_t refused = stats.refused_fallbacks - refused_before_;
  const std::string ran = tutti_comm_last_algorithm(comm_);
  const bool empty = args.count == 0 && args.coll != Collective::Barrier &&
                     args.coll != Collective::Alltoallv;
  bool as_forced = ran == forced_ && refused == 0;
  if (empty) as_forced = ran == "none" && refused == 0;
  else if (refusal_expected_) as_forced = ran != forced_ && refused == 1;
  if (as_forced) return "";
  return str(describe(args), ": forced '", forced_, "'",
             refusal_expected_ ? " (to be refused)" : "", " but '", ran, "' ran (", refused,
             " refused fallbacks)");
}

}  // namespace tutti::testing
