#include "algos/mpi_collective.hpp"

#include <climits>
#include <cstring>
#include <vector>

#include "host/copy.hpp"
#include "host/memory.hpp"
#include "transport/mpi_types.hpp"

namespace tutti {
namespace {

int as_int(size_t v, const char* what) {
  if (v > static_cast<size_t>(INT_MAX))
    fail(TUTTI_ERR_UNSUPPORTED, what, " ", v, " exceeds the int range of MPI");
  return static_cast<int>(v);
}

class MpiCollectiveOp : public Operation {
 public:
  MpiCollectiveOp(const OpLabel& label, const CollArgs& args, int rank, int nranks,
                  std::shared_ptr<bool> comm_in_use)
      : Operation(label), args_(args), rank_(rank), nranks_(nranks),
        comm_in_use_(std::move(comm_in_use)) {}

  void start(const void* in, void* out, MPI_Comm comm) {
    const CollArgs& a = args_;
    const MPI_Datatype dt = mpi_datatype(a.dtype);
    const MPI_Op op = is_reduction(a.coll) ? mpi_op(a.op, a.dtype) : MPI_OP_NULL;
    const int n = as_int(a.count, "count");
    const bool root = rank_ == a.root;
    out_ = out;
    if (premultiplies_average(a, nranks_)) in = premultiply(in, out);
    const void* send = a.in_place ? MPI_IN_PLACE : in;
    int rc = MPI_SUCCESS;
    switch (a.coll) {
      case Collective::Allreduce:
        rc = MPI_Iallreduce(send, out, n, dt, op, comm, &req_);
        break;
      case Collective::Reduce:
        rc = MPI_Ireduce(a.in_place && root ? MPI_IN_PLACE : in, out, n, dt, op, a.root, comm, &req_);
        break;
      case Collective::Bcast: rc = MPI_Ibcast(out, n, dt, a.root, comm, &req_); break;
      case Collective::Allgather:
        rc = MPI_Iallgather(send, n, dt, out, n, dt, comm, &req_);
        break;
      case Collective::ReduceScatter:
        rc = MPI_Ireduce_scatter_block(send, out, n, dt, op, comm, &req_);
        break;
      case Collective::Gather:
        rc = MPI_Igather(a.in_place && root ? MPI_IN_PLACE : in, n, dt, out, n, dt, a.root, comm,
                         &req_);
        break;
      case Collective::Scatter:
        rc = MPI_Iscatter(in, n, dt, a.in_place && root ? MPI_IN_PLACE : out, n, dt, a.root, comm,
                          &req_);
        break;
      case Collective::Alltoall: {
        // In-place alltoall is not implemented by every MPI's non-blocking
        // path; send from a copy instead.
        if (a.in_place) in = copy_input(in, a.count * a.elem_size() * static_cast<size_t>(nranks_));
        rc = MPI_Ialltoall(in, n, dt, out, n, dt, comm, &req_);
        break;
      }
      case Collective::Alltoallv: {
        auto to_ints = [](std::span<const size_t> v, std::vector<int>& dst, const char* what) {
          dst.clear();
          for (size_t x : v) dst.push_back(as_int(x, what));
        };
        to_ints(a.send_counts, sc_, "alltoallv send count");
        to_ints(a.send_displs, sd_, "alltoallv send displacement");
        to_ints(a.recv_counts, rc_, "alltoallv receive count");
        to_ints(a.recv_displs, rd_, "alltoallv receive displacement");
        if (a.in_place) in = copy_input(in, buffer_shape(a, rank_, nranks_).input_bytes);
        rc = MPI_Ialltoallv(in, sc_.data(), sd_.data(), dt, out, rc_.data(), rd_.data(), dt, comm,
                            &req_);
        break;
      }
      case Collective::Barrier: rc = MPI_Ibarrier(comm, &req_); break;
    }
    check_mpi(rc, "starting the MPI collective");
  }

  // MPI_Test progresses the collective itself: tutti's transport has no
  // part in it, and the waiter need not poll UCX's sockets on every poll
  // (with that and a yield after every poll, Open MPI's alltoallv through
  // tutti took 1.13-1.32x its time called directly on 2 x 2 emulated
  // nodes, without them 1.02-1.20: docs/perf/mpi-op-polling-2026-11-29.txt).
  bool uses_transport() const override { return false; }
  bool polls_mpi() const override { return true; }

  bool advance() override {
    if (req_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    const int rc = MPI_Test(&req_, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      finish_with(TUTTI_ERR_TRANSPORT, str("MPI collective failed: ", mpi_error_string(rc)));
      req_ = MPI_REQUEST_NULL;
      return true;
    }
    if (!done) return false;
    finalize_average();
    return true;
  }

  void cancel(Status why, const std::string& message) override {
    // MPI can neither cancel a collective nor free its active request (Open
    // MPI aborts the job on MPI_Request_free): the request is left to MPI,
    // which completes it in the background if the other ranks ever arrive,
    // and with it what it reads and the communicator it runs on (freeing
    // either under a collective in flight crashes Open MPI's progress later).
    finish_with(why, message);
    if (req_ == MPI_REQUEST_NULL) return;
    req_ = MPI_REQUEST_NULL;  // the handle is dropped, never freed
    (void)new Owned{std::move(copy_), std::move(sc_), std::move(sd_), std::move(rc_),
                    std::move(rd_)};  // deliberately never freed
    if (comm_in_use_) *comm_in_use_ = true;
  }

 private:
  const void* copy_input(const void* in, size_t bytes) {
    copy_.resize(bytes);
    host_copy(copy_.data(), in, bytes);
    return copy_.data();
  }

  // 16-bit floats (premultiplies_average): divides this rank's input where
  // MPI will read it, in place in the output buffer (which the result
  // overwrites) or in a copy. Returns the input.
  const void* premultiply(const void* in, void* out) {
    const CollArgs& a = args_;
    const size_t bytes = buffer_shape(a, rank_, nranks_).input_bytes;
    void* at = out;
    if (!a.in_place) {
      in = copy_input(in, bytes);
      at = copy_.data();
    }
    local_divide(at, bytes / a.elem_size(), a.dtype, nranks_, memory_type_of(at));
    return in;
  }

  // MPI has no average: it computed the sum; divide where the result lives.
  void finalize_average() {
    const CollArgs& a = args_;
    if (a.op != Op::Avg || !is_reduction(a.coll) || nranks_ == 1 || premultiplies_average(a, nranks_))
      return;
    if (a.coll == Collective::Reduce && rank_ != a.root) return;
    local_divide(out_, a.count, a.dtype, nranks_, memory_type_of(out_));
  }

  CollArgs args_;
  int rank_, nranks_;
  std::shared_ptr<bool> comm_in_use_;
  MPI_Request req_ = MPI_REQUEST_NULL;
  void* out_ = nullptr;
  // What the collective reads besides the user's buffers.
  std::vector<char> copy_;
  std::vector<int> sc_, sd_, rc_, rd_;
  struct Owned {
    std::vector<char> copy;
    std::vector<int> sc, sd, rc, rd;
  };
};

}  // namespace

std::unique_ptr<Operation> start_mpi_collective(const CollArgs& args, const void* in, void* out,
                                                MPI_Comm comm, int rank, int nranks,
                                                const OpLabel& label,
                                                std::shared_ptr<bool> comm_in_use) {
  auto op = std::make_unique<MpiCollectiveOp>(label, args, rank, nranks, std::move(comm_in_use));
  op->start(in, out, comm);
  return op;
}

}  // namespace tutti
