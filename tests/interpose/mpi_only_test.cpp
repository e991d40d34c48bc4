// An MPI program that knows nothing of tutti: every collective libtutti-mpi
// interposes, on world, dup, split and self communicators, in place and not,
// at several roots and counts, checked against results each rank computes by
// itself. Run with and without LD_PRELOAD=libtutti-mpi.so (tests/interpose/run.sh).
//
//   mpi_only_test            the sweep
//   mpi_only_test --churn N  create, use and free N communicators; fails if
//                            memory grows in the second half
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

int world_rank = 0;
long checks = 0, failures = 0;

void expect(bool ok, const std::string& what) {
  ++checks;
  if (ok) return;
  if (++failures <= 20) std::fprintf(stderr, "rank %d: FAILED %s\n", world_rank, what.c_str());
}

void expect_success(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return expect(true, what);
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  expect(false, what + ": " + text);
}

// Values every rank can compute for any rank: small, so that sums and
// products are exact in every type.
template <typename T>
T value(int rank, size_t i, int salt) {
  return static_cast<T>(static_cast<int>((rank * 7 + i * 13 + salt) % 5) - (std::is_signed_v<T> ? 2 : 0));
}
template <typename T>
T factor(int rank, size_t i) {
  return static_cast<T>((rank + i) % 3 == 0 ? 2 : 1);
}

template <typename T>
T fold(MPI_Op op, T a, T b) {
  if (op == MPI_SUM) return static_cast<T>(a + b);
  if (op == MPI_PROD) return static_cast<T>(a * b);
  if (op == MPI_MIN) return std::min(a, b);
  return std::max(a, b);
}

template <typename T>
std::vector<T> inputs(int rank, size_t count, MPI_Op op, int salt) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = op == MPI_PROD ? factor<T>(rank, i) : value<T>(rank, i, salt);
  return v;
}

template <typename T>
std::vector<T> reduced(int size, size_t count, MPI_Op op, int salt) {
  std::vector<T> r = inputs<T>(0, count, op, salt);
  for (int q = 1; q < size; ++q) {
    const std::vector<T> v = inputs<T>(q, count, op, salt);
    for (size_t i = 0; i < count; ++i) r[i] = fold(op, r[i], v[i]);
  }
  return r;
}

struct Where {
  const char* comm;
  std::string text(const char* call, const char* type, size_t count, const char* extra = "") const {
    return std::string(call) + " on " + comm + " " + type + " count " + std::to_string(count) + " " + extra;
  }
};

template <typename T>
void reductions(MPI_Comm comm, const Where& at, MPI_Datatype dt, const char* type) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
  const char* op_names[] = {"sum", "prod", "min", "max"};
  for (size_t count : {0, 1, 7, 1031, 65537}) {
    for (int o = 0; o < 4; ++o) {
      const MPI_Op op = ops[o];
      const int salt = static_cast<int>(count) + o;
      const std::vector<T> mine = inputs<T>(rank, count, op, salt);
      const std::vector<T> want = reduced<T>(size, count, op, salt);
      for (int place = 0; place < 2; ++place) {
        std::string extra = std::string(op_names[o]) + (place ? " in place" : "");
        std::vector<T> out(count, T(99)), buf = mine;
        expect_success(MPI_Allreduce(place ? MPI_IN_PLACE : mine.data(), place ? buf.data() : out.data(),
                                     count, dt, op, comm), at.text("MPI_Allreduce", type, count, extra.c_str()));
        expect((place ? buf : out) == want, at.text("MPI_Allreduce result", type, count, extra.c_str()));

        for (int root : {0, size - 1}) {
          std::vector<T> rout(count, T(99)), rbuf = mine;
          const bool use_place = place && rank == root;
          expect_success(MPI_Reduce(use_place ? MPI_IN_PLACE : mine.data(), use_place ? rbuf.data() : rout.data(),
                                    count, dt, op, root, comm),
                         at.text("MPI_Reduce", type, count, extra.c_str()));
          if (rank == root) expect((use_place ? rbuf : rout) == want, at.text("MPI_Reduce result", type, count, extra.c_str()));
        }

        // Reduce-scatter: each rank gets `count` elements of a size*count reduction.
        const std::vector<T> all_mine = inputs<T>(rank, count * size, op, salt);
        const std::vector<T> all_want = reduced<T>(size, count * size, op, salt);
        const std::vector<T> my_part(all_want.begin() + rank * count, all_want.begin() + (rank + 1) * count);
        std::vector<T> part(count, T(99)), whole = all_mine;
        expect_success(MPI_Reduce_scatter_block(place ? MPI_IN_PLACE : all_mine.data(), place ? whole.data() : part.data(),
                                                count, dt, op, comm),
                       at.text("MPI_Reduce_scatter_block", type, count, extra.c_str()));
        expect(place ? std::equal(my_part.begin(), my_part.end(), whole.begin()) : part == my_part,
               at.text("MPI_Reduce_scatter_block result", type, count, extra.c_str()));
        std::vector<int> counts(size, static_cast<int>(count));
        std::fill(part.begin(), part.end(), T(99));
        expect_success(MPI_Reduce_scatter(all_mine.data(), part.data(), counts.data(), dt, op, comm),
                       at.text("MPI_Reduce_scatter", type, count, extra.c_str()));
        expect(part == my_part, at.text("MPI_Reduce_scatter result", type, count, extra.c_str()));
      }
    }
  }
}

// Uneven reduce-scatter counts (MPI's own path under the library).
void uneven_reduce_scatter(MPI_Comm comm, const Where& at) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int> counts(size);
  int total = 0;
  for (int q = 0; q < size; ++q) total += counts[q] = q + 1;
  const std::vector<int> mine = inputs<int>(rank, total, MPI_SUM, 3);
  const std::vector<int> want = reduced<int>(size, total, MPI_SUM, 3);
  std::vector<int> out(counts[rank]);
  expect_success(MPI_Reduce_scatter(mine.data(), out.data(), counts.data(), MPI_INT, MPI_SUM, comm),
                 at.text("MPI_Reduce_scatter uneven", "int", total));
  int offset = 0;
  for (int q = 0; q < rank; ++q) offset += counts[q];
  expect(std::equal(out.begin(), out.end(), want.begin() + offset), at.text("MPI_Reduce_scatter uneven result", "int", total));
}

std::vector<int32_t> block_of(int rank, int to, size_t count) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = rank * 1000003 + to * 1009 + static_cast<int32_t>(i);
  return v;
}

// Data movement, with send and receive types that differ as MPI allows
// (ints sent, bytes received) and a derived contiguous type.
void movement(MPI_Comm comm, const Where& at) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  for (size_t count : {0, 1, 7, 1031, 65537}) {
    const int n = static_cast<int>(count);
    for (int root : {0, size - 1}) {
      std::vector<int32_t> b = rank == root ? block_of(root, 0, count) : std::vector<int32_t>(count, -1);
      expect_success(MPI_Bcast(b.data(), n, MPI_INT, root, comm), at.text("MPI_Bcast", "int", count));
      expect(b == block_of(root, 0, count), at.text("MPI_Bcast result", "int", count));

      for (int place = 0; place < 2; ++place) {
        const bool use_place = place && rank == root;
        // Gather: root receives everyone's block.
        std::vector<int32_t> mine = block_of(rank, 0, count), all(count * size, -1);
        if (use_place) std::copy(mine.begin(), mine.end(), all.begin() + root * count);
        expect_success(MPI_Gather(use_place ? MPI_IN_PLACE : mine.data(), n, MPI_INT, all.data(), n * 4, MPI_BYTE,
                                  root, comm), at.text("MPI_Gather", "int/byte", count));
        if (rank == root)
          for (int q = 0; q < size; ++q)
            expect(std::equal(all.begin() + q * count, all.begin() + (q + 1) * count, block_of(q, 0, count).begin()),
                   at.text("MPI_Gather result", "int/byte", count));
        // Scatter: root sends block q to rank q.
        std::vector<int32_t> src;
        if (rank == root)
          for (int q = 0; q < size; ++q) {
            auto blk = block_of(root, q, count);
            src.insert(src.end(), blk.begin(), blk.end());
          }
        std::vector<int32_t> got(count, -1);
        expect_success(MPI_Scatter(src.data(), n, MPI_INT, use_place ? MPI_IN_PLACE : got.data(), n, MPI_INT, root, comm),
                       at.text("MPI_Scatter", "int", count));
        if (!use_place) expect(got == block_of(root, rank, count), at.text("MPI_Scatter result", "int", count));
      }
    }
    for (int place = 0; place < 2; ++place) {
      // Allgather.
      std::vector<int32_t> mine = block_of(rank, 0, count), all(count * size, -1);
      if (place) std::copy(mine.begin(), mine.end(), all.begin() + rank * count);
      expect_success(MPI_Allgather(place ? MPI_IN_PLACE : mine.data(), n, MPI_INT, all.data(), n, MPI_INT, comm),
                     at.text("MPI_Allgather", "int", count));
      bool ok = true;
      for (int q = 0; q < size; ++q)
        ok = ok && std::equal(all.begin() + q * count, all.begin() + (q + 1) * count, block_of(q, 0, count).begin());
      expect(ok, at.text("MPI_Allgather result", "int", count, place ? "in place" : ""));
      // Alltoall: block q goes to rank q.
      std::vector<int32_t> send, recv(count * size, -1);
      for (int q = 0; q < size; ++q) {
        auto blk = block_of(rank, q, count);
        send.insert(send.end(), blk.begin(), blk.end());
      }
      if (place) recv = send;
      expect_success(MPI_Alltoall(place ? MPI_IN_PLACE : send.data(), n, MPI_INT, recv.data(), n, MPI_INT, comm),
                     at.text("MPI_Alltoall", "int", count));
      ok = true;
      for (int q = 0; q < size; ++q)
        ok = ok && std::equal(recv.begin() + q * count, recv.begin() + (q + 1) * count, block_of(q, rank, count).begin());
      expect(ok, at.text("MPI_Alltoall result", "int", count, place ? "in place" : ""));
    }
    // Alltoallv: rank r sends (r + q) % 3 * count / 2 + 1 elements to q... bounded.
    auto amount = [&](int from, int to) { return static_cast<int>(((from + to) % 3) * (count / 2) + (count ? 1 : 0)); };
    std::vector<int> sc(size), sd(size), rc(size), rd(size);
    std::vector<int32_t> send, recv;
    for (int q = 0; q < size; ++q) {
      sc[q] = amount(rank, q);
      sd[q] = static_cast<int>(send.size());
      auto blk = block_of(rank, q, sc[q]);
      send.insert(send.end(), blk.begin(), blk.end());
      rc[q] = amount(q, rank);
      rd[q] = q == 0 ? 0 : rd[q - 1] + rc[q - 1];
    }
    recv.assign(rd[size - 1] + rc[size - 1], -1);
    expect_success(MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_INT, recv.data(), rc.data(), rd.data(), MPI_INT, comm),
                   at.text("MPI_Alltoallv", "int", count));
    bool ok = true;
    for (int q = 0; q < size; ++q)
      ok = ok && std::equal(recv.begin() + rd[q], recv.begin() + rd[q] + rc[q], block_of(q, rank, rc[q]).begin());
    expect(ok, at.text("MPI_Alltoallv result", "int", count));
  }
  expect_success(MPI_Barrier(comm), at.text("MPI_Barrier", "-", 0));
}

// What tutti does not serve: a strided type, MINLOC on pairs, a user op, a
// bitwise op. The library passes them to MPI; the results must be MPI's.
void user_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  for (int i = 0; i < *len; ++i) static_cast<int*>(inout)[i] += static_cast<int*>(in)[i];
}

void passed_to_mpi(MPI_Comm comm, const Where& at) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Datatype strided;
  MPI_Type_vector(4, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  std::vector<int> b(8, -1);
  if (rank == 0) for (int i = 0; i < 8; ++i) b[i] = 100 + i;
  expect_success(MPI_Bcast(b.data(), 1, strided, 0, comm), at.text("MPI_Bcast strided", "vector", 4));
  for (int i = 0; i < 8; i += 2) expect(b[i] == 100 + i, at.text("MPI_Bcast strided result", "vector", 4));
  MPI_Type_free(&strided);

  struct { int value, rank; } pair{rank % 3, rank}, best{};
  expect_success(MPI_Allreduce(&pair, &best, 1, MPI_2INT, MPI_MINLOC, comm), at.text("MPI_Allreduce minloc", "2int", 1));
  expect(best.value == 0 && best.rank == 0, at.text("MPI_Allreduce minloc result", "2int", 1));

  MPI_Op op;
  MPI_Op_create(user_sum, 1, &op);
  int one = 1, total = 0;
  expect_success(MPI_Allreduce(&one, &total, 1, MPI_INT, op, comm), at.text("MPI_Allreduce user op", "int", 1));
  expect(total == size, at.text("MPI_Allreduce user op result", "int", 1));
  MPI_Op_free(&op);

  int bits = 1 << (rank % 16), all = 0;
  expect_success(MPI_Allreduce(&bits, &all, 1, MPI_INT, MPI_BOR, comm), at.text("MPI_Allreduce bor", "int", 1));
  int want = 0;
  for (int q = 0; q < size; ++q) want |= 1 << (q % 16);
  expect(all == want, at.text("MPI_Allreduce bor result", "int", 1));
}

// The non-blocking forms, completed by every completion call MPI has, several
// outstanding at once and mixed with MPI's own point-to-point requests.
void nonblocking(MPI_Comm comm, const Where& at) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int n = 1031;
  const std::vector<int> mine = inputs<int>(rank, n, MPI_SUM, 5);
  const std::vector<int> want = reduced<int>(size, n, MPI_SUM, 5);

  // Three allreduces in flight, finished together.
  std::vector<int> out[3];
  MPI_Request reqs[3];
  for (int k = 0; k < 3; ++k) {
    out[k].assign(n, -1);
    expect_success(MPI_Iallreduce(mine.data(), out[k].data(), n, MPI_INT, MPI_SUM, comm, &reqs[k]),
                   at.text("MPI_Iallreduce", "int", n));
  }
  expect_success(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE), at.text("MPI_Waitall", "int", n));
  for (int k = 0; k < 3; ++k) expect(out[k] == want, at.text("MPI_Iallreduce result", "int", n));
  expect(reqs[0] == MPI_REQUEST_NULL, at.text("MPI_Waitall frees the requests", "int", n));

  // Ibcast by MPI_Test polling.
  const int root = size - 1;
  std::vector<int32_t> b = rank == root ? block_of(root, 0, n) : std::vector<int32_t>(n, -1);
  MPI_Request r;
  expect_success(MPI_Ibcast(b.data(), n, MPI_INT, root, comm, &r), at.text("MPI_Ibcast", "int", n));
  for (int flag = 0; !flag;) expect_success(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), at.text("MPI_Test", "int", n));
  expect(b == block_of(root, 0, n), at.text("MPI_Ibcast result", "int", n));

  // Iallgather, Ialltoall and a ring of MPI's own Isend/Irecv in one MPI_Waitall.
  std::vector<int32_t> gathered(n * size, -1), send, recv(n * size, -1), ring_in(n, -1);
  for (int q = 0; q < size; ++q) {
    auto blk = block_of(rank, q, n);
    send.insert(send.end(), blk.begin(), blk.end());
  }
  const std::vector<int32_t> mine_block = block_of(rank, 0, n), ring_out = block_of(rank, 99, n);
  MPI_Request mixed[4];
  MPI_Status statuses[4];
  expect_success(MPI_Iallgather(mine_block.data(), n, MPI_INT, gathered.data(), n, MPI_INT, comm, &mixed[0]),
                 at.text("MPI_Iallgather", "int", n));
  MPI_Irecv(ring_in.data(), n, MPI_INT, (rank + size - 1) % size, 7, comm, &mixed[1]);
  expect_success(MPI_Ialltoall(send.data(), n, MPI_INT, recv.data(), n, MPI_INT, comm, &mixed[2]),
                 at.text("MPI_Ialltoall", "int", n));
  MPI_Isend(ring_out.data(), n, MPI_INT, (rank + 1) % size, 7, comm, &mixed[3]);
  expect_success(MPI_Waitall(4, mixed, statuses), at.text("MPI_Waitall mixed", "int", n));
  bool ok = true;
  for (int q = 0; q < size; ++q) {
    ok = ok && std::equal(gathered.begin() + q * n, gathered.begin() + (q + 1) * n, block_of(q, 0, n).begin());
    ok = ok && std::equal(recv.begin() + q * n, recv.begin() + (q + 1) * n, block_of(q, rank, n).begin());
  }
  expect(ok, at.text("MPI_Iallgather/MPI_Ialltoall results", "int", n));
  expect(ring_in == block_of((rank + size - 1) % size, 99, n), at.text("MPI_Irecv beside them", "int", n));
  int got = 0;
  MPI_Get_count(&statuses[1], MPI_INT, &got);
  expect(got == n && statuses[1].MPI_SOURCE == (rank + size - 1) % size, at.text("MPI_Irecv status", "int", n));

  // Ireduce and Ireduce_scatter_block, finished by MPI_Waitany.
  std::vector<int> red(n, -1), part(n, -1);
  const std::vector<int> all_mine = inputs<int>(rank, n * size, MPI_MAX, 6);
  const std::vector<int> all_want = reduced<int>(size, n * size, MPI_MAX, 6);
  MPI_Request two[2];
  expect_success(MPI_Ireduce(mine.data(), red.data(), n, MPI_INT, MPI_SUM, 0, comm, &two[0]), at.text("MPI_Ireduce", "int", n));
  expect_success(MPI_Ireduce_scatter_block(all_mine.data(), part.data(), n, MPI_INT, MPI_MAX, comm, &two[1]),
                 at.text("MPI_Ireduce_scatter_block", "int", n));
  for (int left = 2; left > 0; --left) {
    int index = -1;
    expect_success(MPI_Waitany(2, two, &index, MPI_STATUS_IGNORE), at.text("MPI_Waitany", "int", n));
    expect(index == 0 || index == 1, at.text("MPI_Waitany index", "int", n));
  }
  if (rank == 0) expect(red == want, at.text("MPI_Ireduce result", "int", n));
  expect(std::equal(part.begin(), part.end(), all_want.begin() + rank * n), at.text("MPI_Ireduce_scatter_block result", "int", n));

  // Igather and Iscatter by MPI_Waitsome; Ialltoallv whose count arrays are
  // overwritten right after the call (MPI lets a program do so only after
  // completion, but tutti must not depend on the caller's arrays anyway).
  std::vector<int32_t> all(n * size, -1), src, piece(n, -1);
  if (rank == root)
    for (int q = 0; q < size; ++q) {
      auto blk = block_of(root, q, n);
      src.insert(src.end(), blk.begin(), blk.end());
    }
  MPI_Request gs[2];
  expect_success(MPI_Igather(mine_block.data(), n, MPI_INT, all.data(), n, MPI_INT, root, comm, &gs[0]), at.text("MPI_Igather", "int", n));
  expect_success(MPI_Iscatter(src.data(), n, MPI_INT, piece.data(), n, MPI_INT, root, comm, &gs[1]), at.text("MPI_Iscatter", "int", n));
  for (int done = 0; done < 2;) {
    int outcount = 0, indices[2];
    expect_success(MPI_Waitsome(2, gs, &outcount, indices, MPI_STATUSES_IGNORE), at.text("MPI_Waitsome", "int", n));
    if (outcount == MPI_UNDEFINED) break;
    done += outcount;
  }
  if (rank == root)
    for (int q = 0; q < size; ++q)
      expect(std::equal(all.begin() + q * n, all.begin() + (q + 1) * n, block_of(q, 0, n).begin()), at.text("MPI_Igather result", "int", n));
  expect(piece == block_of(root, rank, n), at.text("MPI_Iscatter result", "int", n));

  std::vector<int> sc(size, n), sd(size), rc(size, n), rd(size);
  for (int q = 0; q < size; ++q) sd[q] = rd[q] = q * n;
  std::fill(recv.begin(), recv.end(), -1);
  expect_success(MPI_Ialltoallv(send.data(), sc.data(), sd.data(), MPI_INT, recv.data(), rc.data(), rd.data(), MPI_INT, comm, &r),
                 at.text("MPI_Ialltoallv", "int", n));
  std::fill(sc.begin(), sc.end(), 0);
  std::fill(rd.begin(), rd.end(), 0);
  for (int flag = 0; !flag;) expect_success(MPI_Testall(1, &r, &flag, MPI_STATUSES_IGNORE), at.text("MPI_Testall", "int", n));
  ok = true;
  for (int q = 0; q < size; ++q)
    ok = ok && std::equal(recv.begin() + q * n, recv.begin() + (q + 1) * n, block_of(q, rank, n).begin());
  expect(ok, at.text("MPI_Ialltoallv result", "int", n));

  // Ibarrier by MPI_Request_get_status. (MPI_Request_free is not tried:
  // Open MPI 4.1 refuses it on a collective's request.)
  expect_success(MPI_Ibarrier(comm, &r), at.text("MPI_Ibarrier", "-", 0));
  for (int flag = 0; !flag;) MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
  expect_success(MPI_Wait(&r, MPI_STATUS_IGNORE), at.text("MPI_Wait after get_status", "-", 0));
  // A non-blocking call must not wait for the other ranks: rank 0 starts an
  // ibcast, then receives from rank 1, which sends before its own ibcast.
  if (size >= 2) {
    int x = rank == 0 ? 42 : -1, token = rank == 1 ? 7 : -1;
    expect_success(rank == 1 ? MPI_Send(&token, 1, MPI_INT, 0, 3, comm) : MPI_SUCCESS, at.text("MPI_Send", "int", 1));
    expect_success(MPI_Ibcast(&x, 1, MPI_INT, 0, comm, &r), at.text("MPI_Ibcast before a receive", "int", 1));
    if (rank == 0) expect_success(MPI_Recv(&token, 1, MPI_INT, 1, 3, comm, MPI_STATUS_IGNORE), at.text("MPI_Recv", "int", 1));
    expect_success(MPI_Wait(&r, MPI_STATUS_IGNORE), at.text("MPI_Wait", "int", 1));
    expect(x == 42 && (rank != 0 || token == 7), at.text("MPI_Ibcast and MPI_Recv interleaved", "int", 1));
  }
  // A rank blocked in a call of the MPI library still does its part of an
  // ibcast (MPI's progress rule): rank 0 receives from rank 1, which waits
  // for the ibcast before it sends; a 16 MiB bcast needs the root to go on
  // writing after its first part (libtutti-mpi's progress hook).
  if (size >= 2) {
    std::vector<int> big(size_t{4} << 20, rank == 0 ? 9 : 0);
    int token = rank == 1 ? 8 : -1;
    expect_success(MPI_Ibcast(big.data(), static_cast<int>(big.size()), MPI_INT, 0, comm, &r),
                   at.text("MPI_Ibcast of 16 MiB", "int", big.size()));
    if (rank == 0) {
      expect_success(MPI_Recv(&token, 1, MPI_INT, 1, 4, comm, MPI_STATUS_IGNORE), at.text("MPI_Recv", "int", 1));
      expect_success(MPI_Wait(&r, MPI_STATUS_IGNORE), at.text("MPI_Wait", "int", big.size()));
    } else {
      expect_success(MPI_Wait(&r, MPI_STATUS_IGNORE), at.text("MPI_Wait", "int", big.size()));
      if (rank == 1) expect_success(MPI_Send(&token, 1, MPI_INT, 0, 4, comm), at.text("MPI_Send", "int", 1));
    }
    expect(big.back() == 9 && (rank != 0 || token == 8),
           at.text("MPI_Ibcast progressed while rank 0 waits in MPI_Recv", "int", big.size()));
  }
}

// A bad root with MPI_ERRORS_RETURN: an error code, with a message.
void errors(MPI_Comm comm, const Where& at) {
  int size;
  MPI_Comm_size(comm, &size);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int x = 0;
  const int rc = MPI_Bcast(&x, 1, MPI_INT, size + 5, comm);
  expect(rc != MPI_SUCCESS, at.text("MPI_Bcast with a bad root returns an error", "int", 1));
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, text, &len);
  expect(len > 0, at.text("MPI_Error_string says something", "int", 1));
  if (world_rank == 0) std::printf("bad root: %s\n", text);
}

void run_all(MPI_Comm comm, const char* name) {
  const Where at{name};
  reductions<int>(comm, at, MPI_INT, "int");
  reductions<unsigned>(comm, at, MPI_UNSIGNED, "unsigned");
  reductions<float>(comm, at, MPI_FLOAT, "float");
  reductions<double>(comm, at, MPI_DOUBLE, "double");
  reductions<int64_t>(comm, at, MPI_INT64_T, "int64");
  reductions<long>(comm, at, MPI_LONG, "long");
  reductions<uint8_t>(comm, at, MPI_UNSIGNED_CHAR, "uchar");
  uneven_reduce_scatter(comm, at);
  movement(comm, at);
  passed_to_mpi(comm, at);
  nonblocking(comm, at);
}

long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long value = 0;
  while (status >> key) {
    if (key == "VmRSS:") { status >> value; return value; }
    status.ignore(1 << 10, '\n');
  }
  return 0;
}

// Communicator churn: memory after the second half may exceed memory after
// the first by at most 8 MiB (a leak of one communicator per iteration
// shows at once).
int churn(int iterations) {
  long after_half = 0;
  for (int i = 0; i < iterations; ++i) {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int one = 1, sum = 0, size = 0;
    MPI_Comm_size(dup, &size);
    expect_success(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup), "churn allreduce");
    expect(sum == size, "churn allreduce result");
    MPI_Comm_free(&dup);
    if (i == iterations / 2) after_half = rss_kib();
  }
  const long growth = rss_kib() - after_half;
  std::printf("rank %d: churn of %d communicators, RSS grew %ld KiB in the second half\n", world_rank, iterations, growth);
  expect(growth < 8 * 1024, "churn: memory does not grow");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (argc == 3 && std::strcmp(argv[1], "--churn") == 0) {
    churn(std::atoi(argv[2]));
  } else {
    int world_size;
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    run_all(MPI_COMM_WORLD, "world");
    MPI_Comm dup, split;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    run_all(dup, "dup");
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_size - world_rank, &split);
    run_all(split, "split");
    run_all(MPI_COMM_SELF, "self");
    errors(dup, Where{"dup"});
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
  }
  long all_failures = 0, all_checks = 0;
  MPI_Reduce(&failures, &all_failures, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (world_rank == 0) std::printf("mpi-only-test: %ld checks, %ld failed\n", all_checks, all_failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
