#include "safety/signature_check.hpp"

#include <sched.h>

#include <array>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "base/types.hpp"
#include "transport/mpi_types.hpp"

namespace tutti {
namespace {

// What every rank must agree on. Fields that do not apply to a collective
// are 0 (op for non-reductions, root for unrooted ones, count for alltoallv
// and barrier, whose counts are checked pairwise or do not exist).
enum Field { kCall, kCollective, kCount, kDatatype, kOp, kRoot, kFields };
constexpr const char* kFieldNames[kFields] = {"call number", "collective", "count",
                                              "datatype",    "op",         "root"};

using Signature = std::array<int64_t, kFields>;

Signature signature_of(const CollArgs& a, uint64_t call) {
  Signature s{};
  s[kCall] = static_cast<int64_t>(call);
  s[kCollective] = static_cast<int64_t>(a.coll);
  const bool counted = a.coll != Collective::Alltoallv && a.coll != Collective::Barrier;
  s[kCount] = counted ? static_cast<int64_t>(a.count) : 0;
  s[kDatatype] = a.coll == Collective::Barrier ? 0 : static_cast<int64_t>(a.dtype);
  s[kOp] = is_reduction(a.coll) ? static_cast<int64_t>(a.op) : 0;
  s[kRoot] = has_root(a.coll) ? a.root : 0;
  return s;
}

std::string value_name(Field f, int64_t v) {
  switch (f) {
    case kCollective: return std::string(collective_name(static_cast<Collective>(v)));
    case kDatatype: return std::string(datatype_name(static_cast<Datatype>(v)));
    case kOp: return std::string(op_name(static_cast<Op>(v)));
    default: return std::to_string(v);
  }
}

// "count: 1000 on ranks 0, 2; 999 on rank 1"
std::string describe_field(Field f, const std::vector<Signature>& all) {
  std::map<int64_t, std::vector<int>> ranks_by_value;
  for (size_t r = 0; r < all.size(); ++r) ranks_by_value[all[r][f]].push_back(static_cast<int>(r));
  std::string out = str(kFieldNames[f], ":");
  const char* sep = " ";
  for (const auto& [value, ranks] : ranks_by_value) {
    out += str(sep, value_name(f, value), " on rank", ranks.size() > 1 ? "s " : " ");
    for (size_t i = 0; i < ranks.size(); ++i) out += str(i ? ", " : "", ranks[i]);
    sep = "; ";
  }
  return out;
}

}  // namespace

SignatureCheck::SignatureCheck(MPI_Comm comm) : buffer_(new int64_t[2 * kFields]) {
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup (TUTTI_CHECK)");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

SignatureCheck::~SignatureCheck() {
  // A communicator with an agreement that never finished cannot be freed
  // (Open MPI aborts); it is left to MPI_Finalize.
  if (comm_ != MPI_COMM_NULL && !abandoned_) MPI_Comm_free(&comm_);
}

void SignatureCheck::agree(const CollArgs& args, double timeout_s) {
  const uint64_t call = calls_++;
  const Signature mine = signature_of(args, call);
  // Minimum and maximum of every field in one reduction: min(v), min(-v).
  int64_t* both = buffer_.get();
  for (int f = 0; f < kFields; ++f) {
    both[f] = mine[f];
    both[kFields + f] = -mine[f];
  }
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, both, 2 * kFields, MPI_INT64_T, MPI_MIN, comm_, &req),
            "MPI_Iallreduce (TUTTI_CHECK)");
  const auto start = std::chrono::steady_clock::now();
  for (int done = 0;;) {
    check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test (TUTTI_CHECK)");
    if (done) break;
    sched_yield();
    if (timeout_s > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s) {
      // MPI can neither cancel nor free a collective's request, and a late
      // rank completes it: its buffer must outlive this object.
      abandoned_ = true;
      (void)buffer_.release();
      fail(TUTTI_ERR_TIMEOUT, "TUTTI_CHECK: ", describe(args), " (call #", call, ") timed out after ",
           timeout_s, " s on rank ", rank_,
           ": at least one rank never made a collective call #", call, " on this communicator");
    }
  }
  bool agreed = true;
  for (int f = 0; f < kFields; ++f) agreed = agreed && both[f] == -both[kFields + f];

  if (agreed && args.coll == Collective::Alltoallv) {  // then the pairwise counts
    // What each peer will send me must be what I expect from it.
    std::vector<int64_t> sends(static_cast<size_t>(size_)), theirs(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) sends[r] = static_cast<int64_t>(args.send_counts[r]);
    check_mpi(MPI_Alltoall(sends.data(), 1, MPI_INT64_T, theirs.data(), 1, MPI_INT64_T, comm_),
              "MPI_Alltoall (TUTTI_CHECK)");
    std::string mismatch;
    for (int r = 0; r < size_ && mismatch.empty(); ++r)
      if (theirs[r] != static_cast<int64_t>(args.recv_counts[r]))
        mismatch = str("rank ", rank_, " expects ", args.recv_counts[r], " elements from rank ", r,
                       ", which sends it ", theirs[r]);
    // Everyone fails alike, with the first rank's words.
    int first_bad = mismatch.empty() ? size_ : rank_;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, comm_),
              "MPI_Allreduce (TUTTI_CHECK)");
    if (first_bad == size_) return;
    int length = static_cast<int>(mismatch.size());
    check_mpi(MPI_Bcast(&length, 1, MPI_INT, first_bad, comm_), "MPI_Bcast (TUTTI_CHECK)");
    mismatch.resize(static_cast<size_t>(length));
    check_mpi(MPI_Bcast(mismatch.data(), length, MPI_CHAR, first_bad, comm_),
              "MPI_Bcast (TUTTI_CHECK)");
    fail(TUTTI_ERR_MISMATCH, "TUTTI_CHECK: alltoallv (call #", call, "): counts disagree: ", mismatch);
  }
  if (agreed) return;

  // Every rank saw the disagreement: gather the exact values to name them.
  std::vector<Signature> all(static_cast<size_t>(size_));
  check_mpi(MPI_Allgather(mine.data(), kFields, MPI_INT64_T, all.data(), kFields, MPI_INT64_T, comm_),
            "MPI_Allgather (TUTTI_CHECK)");
  std::string fields;
  for (int f = 0; f < kFields; ++f)
    if (both[f] != -both[kFields + f]) fields += str(fields.empty() ? "" : "; ", describe_field(Field(f), all));
  fail(TUTTI_ERR_MISMATCH, "TUTTI_CHECK: the ranks disagree on collective call #", call,
       " (this rank: ", describe(args), "): ", fields);
}

}  // namespace tutti
