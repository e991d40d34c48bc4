// The C API: the one place where arguments are validated, in-place calls
// are normalised, and C++ exceptions become status codes.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "api/comm.hpp"
#include "api/group.hpp"
#include "api/handles.hpp"
#include "api/progress_elsewhere.hpp"
#include "base/status.hpp"
#include "host/memory.hpp"
#include "transport/mpi_types.hpp"
#include "tutti_config.h"

namespace tutti {
namespace {

// Runs `body`, turning exceptions into status codes and last-error text.
template <typename Body>
int guarded(Body&& body) {
  const progress_elsewhere::ApiCall call;  // before the call may touch a communicator
  try {
    clear_last_error();
    return body();
  } catch (const Error& e) {
    return set_last_error(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return set_last_error(TUTTI_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return set_last_error(TUTTI_ERR_INTERNAL, str("internal error: ", e.what()));
  }
}

[[noreturn]] void invalid(const std::string& message) { fail(TUTTI_ERR_INVALID_ARGUMENT, message); }

bool is_in_place(const void* p) { return p == TUTTI_IN_PLACE || p == MPI_IN_PLACE; }

// The checks below run on every call: each tests inline and builds its
// message out of line (cold), so a valid call pays a compare or two.
[[noreturn, gnu::cold, gnu::noinline]] void null_comm(const char* fn) {
  invalid(str(fn, ": comm is NULL"));
}

// The communicator a call works on, not claimed (tutti_comm_abort asks
// before it claims).
Comm& unclaimed_comm_of(tutti_comm_t comm, const char* fn) {
  if (!comm || !comm->impl) [[unlikely]]
    null_comm(fn);
  return *comm->impl;
}

// The communicator a call works on, claimed for this thread until the call
// returns (progress_elsewhere.hpp).
Comm& comm_of(tutti_comm_t comm, const char* fn) {
  Comm& c = unclaimed_comm_of(comm, fn);
  progress_elsewhere::claim(c);
  return c;
}

// The communicator of a request, claimed likewise.
Comm& comm_of(tutti_request_t r) {
  Comm& c = r->comm();
  progress_elsewhere::claim(c);
  return c;
}

[[noreturn, gnu::cold, gnu::noinline]] void bad_datatype(tutti_datatype_t dt, const char* fn) {
  invalid(str(fn, ": dt=", static_cast<int>(dt), " is not a tutti_datatype_t"));
}

void check_datatype(tutti_datatype_t dt, const char* fn) {
  if (!is_valid_datatype(static_cast<int>(dt))) [[unlikely]]
    bad_datatype(dt, fn);
}

[[noreturn, gnu::cold, gnu::noinline]] void bad_op(tutti_op_t op, const char* fn) {
  invalid(str(fn, ": op=", static_cast<int>(op), " is not a tutti_op_t"));
}

void check_op(tutti_op_t op, const char* fn) {
  if (!is_valid_op(static_cast<int>(op))) [[unlikely]]
    bad_op(op, fn);
}

[[noreturn, gnu::cold, gnu::noinline]] void count_too_large(size_t count, const char* name,
                                                            const char* fn) {
  invalid(str(fn, ": ", name, "=", count, " is too large (a negative value converted to size_t?)"));
}

// A count whose bytes (times the rank count, for the P-block buffers) do
// not fit in the address space is a negative value passed as size_t, or
// garbage.
void check_count(size_t count, const char* name, Datatype dt, int blocks, const char* fn) {
  // A multiplication, not a division: this runs on every call.
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, datatype_size(dt) * static_cast<size_t>(blocks), &bytes) ||
      bytes > static_cast<size_t>(std::numeric_limits<ptrdiff_t>::max())) [[unlikely]]
    count_too_large(count, name, fn);
}

[[noreturn, gnu::cold, gnu::noinline]] void bad_root(int root, const Comm& c, const char* fn) {
  invalid(str(fn, ": root=", root, " is out of range (communicator of ", c.size(), " ranks)"));
}

void check_root(int root, const Comm& c, const char* fn) {
  if (root < 0 || root >= c.size()) [[unlikely]]
    bad_root(root, c, fn);
}

[[noreturn, gnu::cold, gnu::noinline]] void null_buffer(size_t count, const char* name,
                                                        const char* fn) {
  invalid(str(fn, ": ", name, " is NULL with count ", count));
}

void check_buffer(const void* p, size_t count, const char* name, const char* fn) {
  if (count > 0 && p == nullptr) [[unlikely]]
    null_buffer(count, name, fn);
}

[[noreturn, gnu::cold, gnu::noinline]] void overlapping_buffers(const char* fn) {
  invalid(str(fn, ": sendbuf and recvbuf overlap; use TUTTI_IN_PLACE for in-place operation"));
}

// Buffers that overlap without TUTTI_IN_PLACE would have the collective read
// what it already overwrote.
void check_no_overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes,
                      const char* fn) {
  if (!a || !b || a_bytes == 0 || b_bytes == 0) return;
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  if (x < y + b_bytes && y < x + a_bytes) [[unlikely]]
    overlapping_buffers(fn);
}

// alltoallv: receive blocks that overlap would have two peers' data land in
// the same place (MPI calls that erroneous too).
[[noreturn, gnu::cold, gnu::noinline]] void overlapping_blocks(const size_t* counts,
                                                               const size_t* displs, size_t prev,
                                                               size_t next, const char* what,
                                                               const char* fn) {
  invalid(str(fn, ": ", what, " blocks of ranks ", prev, " and ", next, " overlap (elements [",
              displs[prev], ", ", displs[prev] + counts[prev], ") and [", displs[next], ", ",
              displs[next] + counts[next], "))"));
}

// Blocks laid out in rank order (the usual case) are checked in one pass
// with no allocation (a vector and a sort cost a small alltoallv a fifth of
// its time); false where they are not in rank order.
bool disjoint_in_rank_order(const size_t* counts, const size_t* displs, size_t p, const char* what,
                            const char* fn) {
  size_t prev = p;  // the last non-empty block so far; p: none yet
  for (size_t i = 0; i < p; ++i) {
    if (counts[i] == 0) continue;
    if (prev != p) {
      if (displs[prev] > displs[i]) return false;
      if (displs[prev] + counts[prev] > displs[i]) [[unlikely]]
        overlapping_blocks(counts, displs, prev, i, what, fn);
    }
    prev = i;
  }
  return true;
}

void check_disjoint_blocks(const size_t* counts, const size_t* displs, size_t p, const char* what,
                           const char* fn) {
  if (disjoint_in_rank_order(counts, displs, p, what, fn)) return;
  std::vector<size_t> order;
  for (size_t i = 0; i < p; ++i)
    if (counts[i] > 0) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return displs[a] < displs[b]; });
  for (size_t k = 1; k < order.size(); ++k)
    if (displs[order[k - 1]] + counts[order[k - 1]] > displs[order[k]])
      overlapping_blocks(counts, displs, order[k - 1], order[k], what, fn);
}

[[noreturn, gnu::cold, gnu::noinline]] void wrong_device(const char* name, BufferDevice d,
                                                         const char* fn) {
  invalid(str(fn, ": ", name, " is on CUDA device ", d.buffer,
              ", but the calling thread's current device is ", d.current, ": call cudaSetDevice(",
              d.buffer, ") first (a call's device buffers must be on the current device)"));
}

// A device buffer of another device would reach tutti's kernels and stream
// of the current one as an illegal address (which poisons the context):
// refused first. Managed memory may be used from any device. (One more
// pointer query per device buffer, a fraction of a microsecond against a
// device call's tens.)
void check_current_device(const void* p, const char* name, const char* fn) {
  const BufferDevice d = buffer_device_of(p);
  if (d.buffer >= 0 && d.buffer != d.current) [[unlikely]]
    wrong_device(name, d, fn);
}

// Starts the collective; blocking when req is null.
int run(tutti_comm_t comm, CollArgs& args, const void* in, void* out, tutti_request_t* req,
        const char* fn) {
  Comm& c = *comm->impl;
  const bool grouped = group::is_open();  // a thread-local: read once
  // TUTTI_CHECK: a blocking call agrees here; a non-blocking one (or one in
  // a group) inside its operation (start_collective), so that it never
  // blocks.
  if (!req && !grouped) c.check_agreement(args);
  // Each buffer's memory type, looked up once per call (in place, the two
  // are one buffer) where the process has a CUDA device at all. Mixed host
  // and device buffers are allowed: the call then runs on the device.
  const bool lookup = c.device_buffers_possible();
  const MemoryType out_mem = out && lookup ? memory_type_of(out) : MemoryType::Host;
  const MemoryType in_mem = !in || !lookup       ? MemoryType::Host
                            : args.in_place && out ? out_mem
                                                   : memory_type_of(in);
  if (in && in_mem == MemoryType::Cuda) check_current_device(in, "sendbuf", fn);
  if (out && out_mem == MemoryType::Cuda && out != in)
    check_current_device(out, in ? "recvbuf" : "buf", fn);
  const bool device = (in && in_mem == MemoryType::Cuda) || (out && out_mem == MemoryType::Cuda);
  args.memory = device ? MemoryType::Cuda : MemoryType::Host;
  if (grouped) {
    GroupedCall call{.args = args, .in = in, .out = out, .in_mem = in_mem, .out_mem = out_mem};
    if (args.coll == Collective::Alltoallv) {
      call.vcounts[0].assign(args.send_counts.begin(), args.send_counts.end());
      call.vcounts[1].assign(args.send_displs.begin(), args.send_displs.end());
      call.vcounts[2].assign(args.recv_counts.begin(), args.recv_counts.end());
      call.vcounts[3].assign(args.recv_displs.begin(), args.recv_displs.end());
    }
    group::record(comm, std::move(call), req);
    return TUTTI_SUCCESS;
  }
  if (!req) return c.run_blocking(args, in, out, in_mem, out_mem);
  *req = open_request(comm, c.start_collective(args, in, out, in_mem, out_mem));
  return TUTTI_SUCCESS;
}

// Zero-element collectives complete at once, without communication, on
// every rank alike (the count is the same everywhere).
int done_at_once(tutti_request_t* req, tutti_comm_t comm, const CollArgs& args) {
  Comm& c = *comm->impl;
  if (group::is_open()) {
    group::record(comm, GroupedCall{.kind = GroupedCall::Kind::EmptyCollective, .args = args}, req);
    return TUTTI_SUCCESS;
  }
  c.note_empty_call();
  if (req) *req = open_request(comm, c.start_empty_collective(args));
  else c.check_agreement(args);
  return TUTTI_SUCCESS;
}

int allreduce(const void* sendbuf, void* recvbuf, size_t count, tutti_datatype_t dt, tutti_op_t op,
              tutti_comm_t comm, tutti_request_t* req, const char* fn) {
  return guarded([&] {
    comm_of(comm, fn);  // validates comm
    check_datatype(dt, fn);
    check_op(op, fn);
    CollArgs a{.coll = Collective::Allreduce, .count = count, .dtype = Datatype(dt), .op = Op(op)};
    check_count(count, "count", a.dtype, 1, fn);
    a.in_place = is_in_place(sendbuf);
    const void* in = a.in_place ? recvbuf : sendbuf;
    check_buffer(in, count, "sendbuf", fn);
    check_buffer(recvbuf, count, "recvbuf", fn);
    if (!a.in_place) check_no_overlap(in, count * a.elem_size(), recvbuf, count * a.elem_size(), fn);
    if (count == 0) return done_at_once(req, comm, a);
    return run(comm, a, in, recvbuf, req, fn);
  });
}

int reduce(const void* sendbuf, void* recvbuf, size_t count, tutti_datatype_t dt, tutti_op_t op,
           int root, tutti_comm_t comm, tutti_request_t* req, const char* fn) {
  return guarded([&] {
    Comm& c = comm_of(comm, fn);
    check_datatype(dt, fn);
    check_op(op, fn);
    check_root(root, c, fn);
    CollArgs a{.coll = Collective::Reduce, .count = count, .dtype = Datatype(dt), .op = Op(op), .root = root};
    check_count(count, "count", a.dtype, 1, fn);
    const bool is_root = c.rank() == root;
    if (is_in_place(sendbuf) && !is_root)
      invalid(str(fn, ": TUTTI_IN_PLACE is only valid on the root"));
    a.in_place = is_in_place(sendbuf);
    const void* in = a.in_place ? recvbuf : sendbuf;
    void* out = is_root ? recvbuf : nullptr;  // not significant elsewhere
    check_buffer(in, count, "sendbuf", fn);
    if (is_root) check_buffer(out, count, "recvbuf", fn);
    if (!a.in_place) check_no_overlap(in, count * a.elem_size(), out, count * a.elem_size(), fn);
    if (count == 0) return done_at_once(req, comm, a);
    return run(comm, a, in, out, req, fn);
  });
}

int bcast(void* buf, size_t count, tutti_datatype_t dt, int root, tutti_comm_t comm,
          tutti_request_t* req, const char* fn) {
  return guarded([&] {
    Comm& c = comm_of(comm, fn);
    check_datatype(dt, fn);
    check_root(root, c, fn);
    CollArgs a{.coll = Collective::Bcast, .count = count, .dtype = Datatype(dt), .root = root};
    check_count(count, "count", a.dtype, 1, fn);
    check_buffer(buf, count, "buf", fn);
    if (count == 0) return done_at_once(req, comm, a);
    return run(comm, a, nullptr, buf, req, fn);
  });
}

int allgather(const void* sendbuf, void* recvbuf, size_t count, tutti_datatype_t dt,
              tutti_comm_t comm, tutti_request_t* req, const char* fn) {
  return guarded([&] {
    Comm& c = comm_of(comm, fn);
    check_datatype(dt, fn);
    CollArgs a{.coll = Collective::Allgather, .count = count, .dtype = Datatype(dt)};
    check_count(count, "count", a.dtype, c.size(), fn);
    const size_t block = count * a.elem_size();
    a.in_place = is_in_place(sendbuf);
    check_buffer(recvbuf, count, "recvbuf", fn);
    const void* in = a.in_place ? static_cast<char*>(recvbuf) + block * static_cast<size_t>(c.rank())
                                : sendbuf;
    check_buffer(in, count, "sendbuf", fn);
    if (!a.in_place) check_no_overlap(in, block, recvbuf, block * static_cast<size_t>(c.size()), fn);
    if (count == 0) return done_at_once(req, comm, a);
    return run(comm, a, in, recvbuf, req, fn);
  });
}

int reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount, tutti_datatype_t dt,
                   tutti_op_t op, tutti_comm_t comm, tutti_request_t* req, const char* fn) {
  return guarded([&] {
    Comm& c = comm_of(comm, fn);
    check_datatype(dt, fn);
    check_op(op, fn);
    CollArgs a{.coll = Collective::ReduceScatter, .count = recvcount, .dtype = Datatype(dt), .op = Op(op)};
    check_count(recvcount, "recvcount", a.dtype, c.size(), fn);
    const size_t block = recvcount * a.elem_size();
    a.in_place = is_in_place(sendbuf);
    const void* in = a.in_place ? recvbuf : sendbuf;
    check_buffer(in, recvcount, "sendbuf", fn);
    check_buffer(recvbuf, recvcount, "recvbuf", fn);
    if (!a.in_place) check_no_overlap(in, block * static_cast<size_t>(c.size()), recvbuf, block, fn);
    if (recvcount == 0) return done_at_once(req, comm, a);
    return run(comm, a, in, recvbuf, req, fn);
  });
}

int gather(const void* sendbuf, void* recvbuf, size_t count, tutti_datatype_t dt, int root,
           tutti_comm_t comm, tutti_request_t* req, const char* fn) {
  return guarded([&] {
    Comm& c = comm_of(comm, fn);
    check_datatype(dt, fn);
    check_root(root, c, fn);
    CollArgs a{.coll = Collective::Gather, .count = count, .dtype = Datatype(dt), .root = root};
    check_count(count, "count", a.dtype, c.size(), fn);
    const size_t block = count * a.elem_size();
    const bool is_root = c.rank() == root;
    if (is_in_place(sendbuf) && !is_root)
      invalid(str(fn, ": TUTTI_IN_PLACE is only valid on the root"));
    a.in_place = is_in_place(sendbuf);
    void* out = is_root ? recvbuf : nullptr;
    if (is_root) check_buffer(out, count, "recvbuf", fn);
    const void* in = a.in_place ? static_cast<char*>(recvbuf) + block * static_cast<size_t>(root)
                                : sendbuf;
    check_buffer(in, count, "sendbuf", fn);
    if (!a.in_place) check_no_overlap(in, block, out, block * static_cast<size_t>(c.size()), fn);
    if (count == 0) return done_at_once(req, comm, a);
    return run(comm, a, in, out, req, fn);
  });
}

int scatter(const void* sendbuf, void* recvbuf, size_t count, tutti_datatype_t dt, int root,
            tutti_comm_t comm, tutti_request_t* req, const char* fn) {
  return guarded([&] {
    Comm& c = comm_of(comm, fn);
    check_datatype(dt, fn);
    check_root(root, c, fn);
    CollArgs a{.coll = Collective::Scatter, .count = count, .dtype = Datatype(dt), .root = root};
    check_count(count, "count", a.dtype, c.size(), fn);
    const size_t block = count * a.elem_size();
    const bool is_root = c.rank() == root;
    if (is_in_place(recvbuf) && !is_root)
      invalid(str(fn, ": TUTTI_IN_PLACE is only valid on the root"));
    a.in_place = is_in_place(recvbuf);
    const void* in = is_root ? sendbuf : nullptr;
    if (is_root) check_buffer(in, count, "sendbuf", fn);
    void* out = a.in_place ? const_cast<char*>(static_cast<const char*>(sendbuf)) +
                                 block * static_cast<size_t>(root)
                           : recvbuf;
    check_buffer(out, count, "recvbuf", fn);
    if (!a.in_place) check_no_overlap(in, block * static_cast<size_t>(c.size()), out, block, fn);
    if (count == 0) return done_at_once(req, comm, a);
    return run(comm, a, in, out, req, fn);
  });
}

int alltoall(const void* sendbuf, void* recvbuf, size_t count, tutti_datatype_t dt,
             tutti_comm_t comm, tutti_request_t* req, const char* fn) {
  return guarded([&] {
    Comm& c = comm_of(comm, fn);
    check_datatype(dt, fn);
    CollArgs a{.coll = Collective::Alltoall, .count = count, .dtype = Datatype(dt)};
    check_count(count, "count", a.dtype, c.size(), fn);
    const size_t bytes = count * a.elem_size() * static_cast<size_t>(c.size());
    a.in_place = is_in_place(sendbuf);
    const void* in = a.in_place ? recvbuf : sendbuf;
    check_buffer(in, count, "sendbuf", fn);
    check_buffer(recvbuf, count, "recvbuf", fn);
    if (!a.in_place) check_no_overlap(in, bytes, recvbuf, bytes, fn);
    if (count == 0) return done_at_once(req, comm, a);
    return run(comm, a, in, recvbuf, req, fn);
  });
}

int alltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls, void* recvbuf,
              const size_t* recvcounts, const size_t* rdispls, tutti_datatype_t dt,
              tutti_comm_t comm, tutti_request_t* req, const char* fn) {
  return guarded([&] {
    Comm& c = comm_of(comm, fn);
    check_datatype(dt, fn);
    CollArgs a{.coll = Collective::Alltoallv, .dtype = Datatype(dt)};
    a.in_place = is_in_place(sendbuf);
    if (!recvcounts || !rdispls) invalid(str(fn, ": recvcounts and rdispls must not be NULL"));
    if (a.in_place) {
      // MPI's rule: the data to send is where the data to receive goes.
      sendcounts = recvcounts;
      sdispls = rdispls;
    } else if (!sendcounts || !sdispls) {
      invalid(str(fn, ": sendcounts and sdispls must not be NULL"));
    }
    const size_t p = static_cast<size_t>(c.size());
    a.send_counts = {sendcounts, p};
    a.send_displs = {sdispls, p};
    a.recv_counts = {recvcounts, p};
    a.recv_displs = {rdispls, p};
    for (size_t i = 0; i < p; ++i) {
      check_count(sendcounts[i], "sendcounts[i]", a.dtype, 1, fn);
      check_count(recvcounts[i], "recvcounts[i]", a.dtype, 1, fn);
      check_count(sdispls[i], "sdispls[i]", a.dtype, 1, fn);
      check_count(rdispls[i], "rdispls[i]", a.dtype, 1, fn);
      check_count(sendcounts[i] + sdispls[i], "sdispls[i] + sendcounts[i]", a.dtype, 1, fn);
      check_count(recvcounts[i] + rdispls[i], "rdispls[i] + recvcounts[i]", a.dtype, 1, fn);
    }
    check_disjoint_blocks(recvcounts, rdispls, p, "receive", fn);
    const BufferShape shape = buffer_shape(a, c.rank(), c.size());
    const void* in = a.in_place ? recvbuf : sendbuf;
    check_buffer(in, shape.input_bytes, "sendbuf", fn);
    check_buffer(recvbuf, shape.output_bytes, "recvbuf", fn);
    if (!a.in_place) check_no_overlap(in, shape.input_bytes, recvbuf, shape.output_bytes, fn);
    return run(comm, a, in, recvbuf, req, fn);
  });
}

int barrier(tutti_comm_t comm, tutti_request_t* req, const char* fn) {
  return guarded([&] {
    comm_of(comm, fn);  // validates comm
    CollArgs a{.coll = Collective::Barrier};
    return run(comm, a, nullptr, nullptr, req, fn);
  });
}

int point_to_point(bool is_send, const void* buf, size_t count, tutti_datatype_t dt, int peer,
                   int tag, tutti_comm_t comm, tutti_request_t* req, const char* fn,
                   int* source = nullptr) {
  return guarded([&] {
    Comm& c = comm_of(comm, fn);
    check_datatype(dt, fn);
    check_count(count, "count", Datatype(dt), 1, fn);
    check_buffer(buf, count, "buf", fn);
    static_assert(TUTTI_ANY_SOURCE == kAnySource);
    const bool any_source = !is_send && peer == TUTTI_ANY_SOURCE;
    if (!any_source && (peer < 0 || peer >= c.size()))
      invalid(str(fn, ": peer=", peer, " is out of range (communicator of ", c.size(), " ranks",
                  is_send ? "" : "; TUTTI_ANY_SOURCE receives from any rank", ")"));
    if (tag < 0) invalid(str(fn, ": tag=", tag, " is negative"));
    const MemoryType mem = count > 0 ? memory_type_of(buf) : MemoryType::Host;
    if (mem == MemoryType::Cuda) check_current_device(buf, "buf", fn);
    const size_t bytes = count * datatype_size(Datatype(dt));
    if (group::is_open()) {
      group::record(comm,
                    GroupedCall{.kind = is_send ? GroupedCall::Kind::Send : GroupedCall::Kind::Receive,
                                .buf = const_cast<void*>(buf), .bytes = bytes, .peer = peer,
                                .tag = tag, .mem = mem, .source = source},
                    req);
      return TUTTI_SUCCESS;
    }
    std::shared_ptr<Operation> op = c.start_point_to_point(
        is_send, const_cast<void*>(buf), bytes, peer, tag, mem, source);
    if (req) {
      *req = open_request(comm, std::move(op));
      return TUTTI_SUCCESS;
    }
    return c.wait(*op, c.config().timeout_s);
  });
}

// A request of a group that has not ended: waiting for it would wait for
// ever (nothing starts before tutti_group_end).
[[noreturn, gnu::cold]] void not_started_yet(const char* fn) {
  invalid(str(fn, ": the request belongs to a group that has not ended (call tutti_group_end first)"));
}

int wait_request(tutti_request_t* req, double timeout_s, const char* fn) {
  return guarded([&] {
    if (!req) invalid(str(fn, ": req is NULL"));
    if (!*req) return TUTTI_SUCCESS;  // MPI_REQUEST_NULL-like: nothing to wait for
    if ((*req)->group_pending) not_started_yet(fn);
    tutti_request_t r = *req;
    *req = nullptr;
    const std::shared_ptr<Operation> op = std::move(r->op);
    Comm& c = comm_of(r);
    close_request(r);
    if (!op) return TUTTI_SUCCESS;
    return c.wait(*op, timeout_s);
  });
}

}  // namespace
}  // namespace tutti

using namespace tutti;

extern "C" {

const char* tutti_strerror(int status) { return status_string(status); }
const char* tutti_last_error(void) { return last_error(); }
const char* tutti_version(void) { return TUTTI_VERSION_STRING; }

int tutti_comm_create(MPI_Comm mpi_comm, tutti_comm_t* comm) {
  return guarded([&] {
    if (!comm) invalid("tutti_comm_create: comm is NULL");
    *comm = nullptr;
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
      invalid("tutti_comm_create: MPI is not initialised (call MPI_Init first)");
    if (mpi_comm == MPI_COMM_NULL) invalid("tutti_comm_create: mpi_comm is MPI_COMM_NULL");
    int inter = 0;
    check_mpi(MPI_Comm_test_inter(mpi_comm, &inter), "MPI_Comm_test_inter");
    if (inter) invalid("tutti_comm_create: mpi_comm is an inter-communicator (only intra-communicators are supported)");
    auto c = std::make_unique<tutti_comm>();
    c->impl = std::make_unique<Comm>(mpi_comm);
    *comm = c.release();
    return TUTTI_SUCCESS;
  });
}

int tutti_comm_destroy(tutti_comm_t comm) {
  return guarded([&] {
    if (!comm) return TUTTI_SUCCESS;
    if (comm->impl) progress_elsewhere::claim(*comm->impl);  // no pass may progress it now
    if (comm->open_requests > 0)
      invalid(str("tutti_comm_destroy: ", comm->open_requests,
                  " request(s) of this communicator not yet completed; call tutti_wait on them first"));
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      invalid("tutti_comm_destroy: MPI is already finalised (destroy tutti communicators before MPI_Finalize)");
    delete comm;
    return TUTTI_SUCCESS;
  });
}

int tutti_comm_abort(tutti_comm_t comm) {
  return guarded([&] {
    // Asked first: a call another thread is inside (a hung collective
    // under a watchdog) sees it in its idle wait, aborts and returns; then
    // this thread's claim goes through.
    unclaimed_comm_of(comm, "tutti_comm_abort").ask_abort();
    comm_of(comm, "tutti_comm_abort").abort();
    return TUTTI_SUCCESS;
  });
}

int tutti_comm_rank(tutti_comm_t comm, int* rank) {
  return guarded([&] {
    Comm& c = comm_of(comm, "tutti_comm_rank");
    if (!rank) invalid("tutti_comm_rank: rank is NULL");
    *rank = c.rank();
    return TUTTI_SUCCESS;
  });
}

int tutti_comm_size(tutti_comm_t comm, int* size) {
  return guarded([&] {
    Comm& c = comm_of(comm, "tutti_comm_size");
    if (!size) invalid("tutti_comm_size: size is NULL");
    *size = c.size();
    return TUTTI_SUCCESS;
  });
}

int tutti_allreduce(const void* s, void* r, size_t n, tutti_datatype_t dt, tutti_op_t op,
                    tutti_comm_t comm) {
  return allreduce(s, r, n, dt, op, comm, nullptr, "tutti_allreduce");
}
int tutti_iallreduce(const void* s, void* r, size_t n, tutti_datatype_t dt, tutti_op_t op,
                     tutti_comm_t comm, tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_iallreduce: req is NULL");
  return allreduce(s, r, n, dt, op, comm, req, "tutti_iallreduce");
}

int tutti_reduce(const void* s, void* r, size_t n, tutti_datatype_t dt, tutti_op_t op, int root,
                 tutti_comm_t comm) {
  return reduce(s, r, n, dt, op, root, comm, nullptr, "tutti_reduce");
}
int tutti_ireduce(const void* s, void* r, size_t n, tutti_datatype_t dt, tutti_op_t op, int root,
                  tutti_comm_t comm, tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_ireduce: req is NULL");
  return reduce(s, r, n, dt, op, root, comm, req, "tutti_ireduce");
}

int tutti_bcast(void* buf, size_t n, tutti_datatype_t dt, int root, tutti_comm_t comm) {
  return bcast(buf, n, dt, root, comm, nullptr, "tutti_bcast");
}
int tutti_ibcast(void* buf, size_t n, tutti_datatype_t dt, int root, tutti_comm_t comm,
                 tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_ibcast: req is NULL");
  return bcast(buf, n, dt, root, comm, req, "tutti_ibcast");
}

int tutti_allgather(const void* s, void* r, size_t n, tutti_datatype_t dt, tutti_comm_t comm) {
  return allgather(s, r, n, dt, comm, nullptr, "tutti_allgather");
}
int tutti_iallgather(const void* s, void* r, size_t n, tutti_datatype_t dt, tutti_comm_t comm,
                     tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_iallgather: req is NULL");
  return allgather(s, r, n, dt, comm, req, "tutti_iallgather");
}

int tutti_reduce_scatter(const void* s, void* r, size_t n, tutti_datatype_t dt, tutti_op_t op,
                         tutti_comm_t comm) {
  return reduce_scatter(s, r, n, dt, op, comm, nullptr, "tutti_reduce_scatter");
}
int tutti_ireduce_scatter(const void* s, void* r, size_t n, tutti_datatype_t dt, tutti_op_t op,
                          tutti_comm_t comm, tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_ireduce_scatter: req is NULL");
  return reduce_scatter(s, r, n, dt, op, comm, req, "tutti_ireduce_scatter");
}

int tutti_gather(const void* s, void* r, size_t n, tutti_datatype_t dt, int root,
                 tutti_comm_t comm) {
  return gather(s, r, n, dt, root, comm, nullptr, "tutti_gather");
}
int tutti_igather(const void* s, void* r, size_t n, tutti_datatype_t dt, int root,
                  tutti_comm_t comm, tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_igather: req is NULL");
  return gather(s, r, n, dt, root, comm, req, "tutti_igather");
}

int tutti_scatter(const void* s, void* r, size_t n, tutti_datatype_t dt, int root,
                  tutti_comm_t comm) {
  return scatter(s, r, n, dt, root, comm, nullptr, "tutti_scatter");
}
int tutti_iscatter(const void* s, void* r, size_t n, tutti_datatype_t dt, int root,
                   tutti_comm_t comm, tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_iscatter: req is NULL");
  return scatter(s, r, n, dt, root, comm, req, "tutti_iscatter");
}

int tutti_alltoall(const void* s, void* r, size_t n, tutti_datatype_t dt, tutti_comm_t comm) {
  return alltoall(s, r, n, dt, comm, nullptr, "tutti_alltoall");
}
int tutti_ialltoall(const void* s, void* r, size_t n, tutti_datatype_t dt, tutti_comm_t comm,
                    tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_ialltoall: req is NULL");
  return alltoall(s, r, n, dt, comm, req, "tutti_ialltoall");
}

int tutti_alltoallv(const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc,
                    const size_t* rd, tutti_datatype_t dt, tutti_comm_t comm) {
  return alltoallv(s, sc, sd, r, rc, rd, dt, comm, nullptr, "tutti_alltoallv");
}
int tutti_ialltoallv(const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc,
                     const size_t* rd, tutti_datatype_t dt, tutti_comm_t comm,
                     tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_ialltoallv: req is NULL");
  return alltoallv(s, sc, sd, r, rc, rd, dt, comm, req, "tutti_ialltoallv");
}

int tutti_barrier(tutti_comm_t comm) { return barrier(comm, nullptr, "tutti_barrier"); }
int tutti_ibarrier(tutti_comm_t comm, tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_ibarrier: req is NULL");
  return barrier(comm, req, "tutti_ibarrier");
}

int tutti_send(const void* buf, size_t n, tutti_datatype_t dt, int peer, int tag,
               tutti_comm_t comm) {
  return point_to_point(true, buf, n, dt, peer, tag, comm, nullptr, "tutti_send");
}
int tutti_recv(void* buf, size_t n, tutti_datatype_t dt, int peer, int tag, tutti_comm_t comm) {
  return point_to_point(false, buf, n, dt, peer, tag, comm, nullptr, "tutti_recv");
}
int tutti_isend(const void* buf, size_t n, tutti_datatype_t dt, int peer, int tag,
                tutti_comm_t comm, tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_isend: req is NULL");
  return point_to_point(true, buf, n, dt, peer, tag, comm, req, "tutti_isend");
}
int tutti_irecv(void* buf, size_t n, tutti_datatype_t dt, int peer, int tag, tutti_comm_t comm,
                tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_irecv: req is NULL");
  return point_to_point(false, buf, n, dt, peer, tag, comm, req, "tutti_irecv");
}
int tutti_recv_from(void* buf, size_t n, tutti_datatype_t dt, int peer, int tag, tutti_comm_t comm,
                    int* source) {
  return point_to_point(false, buf, n, dt, peer, tag, comm, nullptr, "tutti_recv_from", source);
}
int tutti_irecv_from(void* buf, size_t n, tutti_datatype_t dt, int peer, int tag,
                     tutti_comm_t comm, int* source, tutti_request_t* req) {
  if (!req) return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_irecv_from: req is NULL");
  return point_to_point(false, buf, n, dt, peer, tag, comm, req, "tutti_irecv_from", source);
}

int tutti_group_start(void) {
  return guarded([] {
    group::start();
    return TUTTI_SUCCESS;
  });
}

int tutti_group_end(void) {
  return guarded([] { return group::end(); });
}

int tutti_wait(tutti_request_t* req) {
  if (req && *req) return wait_request(req, (*req)->comm().config().timeout_s, "tutti_wait");
  return wait_request(req, 0, "tutti_wait");
}

int tutti_wait_timeout(tutti_request_t* req, double seconds) {
  if (!(seconds >= 0))
    return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti_wait_timeout: seconds must be >= 0");
  return wait_request(req, seconds, "tutti_wait_timeout");
}

int tutti_progress(int* events) {
  return guarded([&] {
    const int found =
        progress_elsewhere::nested_call() ? 0 : progress_elsewhere::progress_others(nullptr);
    if (events) *events = found;
    return TUTTI_SUCCESS;
  });
}

int tutti_test(tutti_request_t* req, int* done) {
  return guarded([&] {
    if (!req) invalid("tutti_test: req is NULL");
    if (!done) invalid("tutti_test: done is NULL");
    *done = 0;
    if (*req && (*req)->group_pending) not_started_yet("tutti_test");
    if (!*req || !(*req)->op) {
      if (*req) close_request(*req);
      *req = nullptr;
      *done = 1;
      return TUTTI_SUCCESS;
    }
    tutti_request* r = *req;
    const int events = comm_of(r).progress();
    if (!r->op->finished()) {
      // A poll that found its own communicator idle does this rank's part
      // of the calls in flight on the others, as a wait does: a program
      // polling this request may be what a peer waits on over there.
      if (events == 0) progress_elsewhere::progress_others(&r->comm());
      r->comm().poll_aborts();
      return TUTTI_SUCCESS;
    }
    *done = 1;
    const Status st = r->op->status();
    std::string message = str(r->op->description(), ": ", r->op->error());
    close_request(r);
    *req = nullptr;
    if (st != TUTTI_SUCCESS) return set_last_error(st, message);
    return TUTTI_SUCCESS;
  });
}

int tutti_comm_force_algorithm(tutti_comm_t comm, const char* collective, const char* algorithm) {
  return guarded([&] {
    Comm& c = comm_of(comm, "tutti_comm_force_algorithm");
    if (!collective) invalid("tutti_comm_force_algorithm: collective is NULL");
    const auto coll = parse_collective(collective);
    if (!coll) invalid(str("tutti_comm_force_algorithm: unknown collective '", collective, "'"));
    c.force_algorithm(*coll, algorithm ? algorithm : "");
    return TUTTI_SUCCESS;
  });
}

int tutti_comm_set_stream(tutti_comm_t comm, void* cuda_stream) {
  return guarded([&] {
    Comm& c = comm_of(comm, "tutti_comm_set_stream");
    c.set_stream(static_cast<CUstream_st*>(cuda_stream));
    return TUTTI_SUCCESS;
  });
}

const char* tutti_comm_last_algorithm(tutti_comm_t comm) {
  if (!comm || !comm->impl) return "";
  return comm->impl->last_algorithm().data();
}

int tutti_comm_stats(tutti_comm_t comm, tutti_comm_stats_t* stats) {
  return guarded([&] {
    Comm& c = comm_of(comm, "tutti_comm_stats");
    if (!stats) invalid("tutti_comm_stats: stats is NULL");
    const CommStats& s = c.stats();
    stats->collectives = s.collectives;
    stats->mpi_fallbacks = s.mpi_fallbacks;
    stats->refused_fallbacks = s.refused_fallbacks;
    stats->schedule_cache_hits = s.schedule_cache_hits;
    stats->schedule_builds = s.schedule_builds;
    stats->grouped_calls = s.grouped_calls;
    stats->fused_calls = s.fused_calls;
    return TUTTI_SUCCESS;
  });
}

}  // extern "C"
