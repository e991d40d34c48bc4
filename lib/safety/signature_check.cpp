#include "safety/signature_check.hpp"

#include <array>
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

SignatureCheck::SignatureCheck(MPI_Comm comm) {
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup (TUTTI_CHECK)");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

SignatureCheck::~SignatureCheck() {
  // A communicator with an agreement that never finished cannot be freed
  // (Open MPI aborts); it is left to MPI_Finalize.
  if (comm_ != MPI_COMM_NULL && !abandoned_) MPI_Comm_free(&comm_);
}

std::unique_ptr<Agreement> SignatureCheck::start(const CollArgs& args) {
  std::unique_ptr<Agreement> a(new Agreement(*this, args, calls_++));
  const Signature mine = signature_of(args, a->call_);
  a->b_->mine = mine;
  // Minimum and maximum of every field in one reduction: min(v), min(-v).
  for (int f = 0; f < kFields; ++f) {
    a->b_->both[f] = mine[f];
    a->b_->both[kFields + f] = -mine[f];
  }
  a->post(MPI_Iallreduce(MPI_IN_PLACE, a->b_->both.data(), 2 * kFields, MPI_INT64_T, MPI_MIN,
                         comm_, &a->request_),
          "MPI_Iallreduce (TUTTI_CHECK)");
  return a;
}

Agreement::Agreement(SignatureCheck& check, const CollArgs& args, uint64_t call)
    : check_(check), args_(args), call_(call), b_(std::make_unique<Buffers>()) {}

Agreement::~Agreement() {
  if (request_ == MPI_REQUEST_NULL) return;
  // MPI can neither cancel nor free a collective's request, and a late rank
  // completes it: its buffers must outlive this object, and the check's
  // communicator cannot be freed.
  check_.abandoned_ = true;
  (void)b_.release();
}

std::string Agreement::stuck_message(double timeout_s) const {
  return str("TUTTI_CHECK: ", describe(args_), " (call #", call_, ") timed out after ", timeout_s,
             " s on rank ", check_.rank_, ": at least one rank never made a collective call #",
             call_, " on this communicator");
}

void Agreement::post(int rc, const char* what) { check_mpi(rc, what); }

void Agreement::finish(Status status, std::string error) {
  status_ = status;
  error_ = std::move(error);
  step_ = Step::Done;
}

bool Agreement::poll() {
  while (step_ != Step::Done) {
    int done = 0;
    check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test (TUTTI_CHECK)");
    if (!done) return false;
    request_ = MPI_REQUEST_NULL;
    Buffers& b = *b_;
    const MPI_Comm comm = check_.comm_;
    switch (step_) {
      case Step::Signature: after_signature(); break;
      case Step::Counts: after_counts(); break;
      case Step::FirstBad:
        if (b.first_bad == check_.size_) {
          finish(TUTTI_SUCCESS, "");
          break;
        }
        b.length = static_cast<int>(b.mismatch.size());
        step_ = Step::Length;
        post(MPI_Ibcast(&b.length, 1, MPI_INT, b.first_bad, comm, &request_),
             "MPI_Ibcast (TUTTI_CHECK)");
        break;
      case Step::Length:
        b.mismatch.resize(static_cast<size_t>(b.length));
        step_ = Step::Message;
        post(MPI_Ibcast(b.mismatch.data(), b.length, MPI_CHAR, b.first_bad, comm, &request_),
             "MPI_Ibcast (TUTTI_CHECK)");
        break;
      case Step::Message:
        // Everyone fails alike, with the first disagreeing rank's words.
        finish(TUTTI_ERR_MISMATCH,
               str("TUTTI_CHECK: alltoallv (call #", call_, "): counts disagree: ", b.mismatch));
        break;
      case Step::Gather: {
        std::string fields;
        for (int f = 0; f < kFields; ++f)
          if (b.both[f] != -b.both[kFields + f])
            fields += str(fields.empty() ? "" : "; ", describe_field(Field(f), b.all));
        finish(TUTTI_ERR_MISMATCH,
               str("TUTTI_CHECK: the ranks disagree on collective call #", call_,
                   " (this rank: ", describe(args_), "): ", fields));
        break;
      }
      case Step::Done: break;
    }
  }
  return true;
}

void Agreement::after_signature() {
  Buffers& b = *b_;
  const int size = check_.size_;
  bool agreed = true;
  for (int f = 0; f < kFields; ++f) agreed = agreed && b.both[f] == -b.both[kFields + f];
  if (agreed && args_.coll == Collective::Alltoallv) {
    // Then the pairwise counts: what each peer will send me must be what I
    // expect from it.
    b.sends.resize(static_cast<size_t>(size));
    b.theirs.resize(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) b.sends[r] = static_cast<int64_t>(args_.send_counts[r]);
    step_ = Step::Counts;
    post(MPI_Ialltoall(b.sends.data(), 1, MPI_INT64_T, b.theirs.data(), 1, MPI_INT64_T,
                       check_.comm_, &request_),
         "MPI_Ialltoall (TUTTI_CHECK)");
    return;
  }
  if (agreed) {
    finish(TUTTI_SUCCESS, "");
    return;
  }
  // Every rank saw the disagreement: gather the exact values to name them.
  b.all.resize(static_cast<size_t>(size));
  step_ = Step::Gather;
  post(MPI_Iallgather(b.mine.data(), kFields, MPI_INT64_T, b.all.data(), kFields, MPI_INT64_T,
                      check_.comm_, &request_),
       "MPI_Iallgather (TUTTI_CHECK)");
}

void Agreement::after_counts() {
  Buffers& b = *b_;
  const int rank = check_.rank_, size = check_.size_;
  for (int r = 0; r < size && b.mismatch.empty(); ++r)
    if (b.theirs[r] != static_cast<int64_t>(args_.recv_counts[r]))
      b.mismatch = str("rank ", rank, " expects ", args_.recv_counts[r], " elements from rank ", r,
                       ", which sends it ", b.theirs[r]);
  b.first_bad = b.mismatch.empty() ? size : rank;
  step_ = Step::FirstBad;
  post(MPI_Iallreduce(MPI_IN_PLACE, &b.first_bad, 1, MPI_INT, MPI_MIN, check_.comm_, &request_),
       "MPI_Iallreduce (TUTTI_CHECK)");
}

}  // namespace tutti
