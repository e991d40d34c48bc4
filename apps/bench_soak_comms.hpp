// The soak's communicators (tutti-bench --soak): the caller's, then
// --soak-comms' more over the same ranks and --soak-split's over parts of
// the ranks, which --soak-churn destroys and makes anew.
#pragma once

#include <mpi.h>

#include <vector>

#include "bench_options.hpp"
#include "tutti/tutti.h"

namespace tutti::apps {

// One of the soak's communicators as this rank sees it: `comm` is null
// where this rank is not a member (--soak-split), and then it skips the
// calls drawn for it.
struct SoakComm {
  tutti_comm_t comm = nullptr;
  int rank = -1, nranks = 0;
};

// The caller's communicator first, then --soak-comms' more over the same
// ranks (each call on one drawn at random; a rank waiting on one then owes
// its peers progress on the others) and --soak-split's over parts of the
// ranks.
class SoakComms {
 public:
  // `parent` is the MPI communicator of the same ranks as `comm` (the
  // world, or a thread's duplicate of it with --soak-threads): the extra
  // communicators are made from it.
  SoakComms(tutti_comm_t comm, MPI_Comm parent, int rank, int nranks)
      : parent_(parent), rank_(rank), nranks_(nranks) {
    comms_.push_back({comm, rank, nranks});
  }
  ~SoakComms() { drop_more(); }
  SoakComms(const SoakComms&) = delete;
  SoakComms& operator=(const SoakComms&) = delete;

  // Makes the extra communicators `o` asks for. Collective over `parent`.
  // False (said on stderr) where one failed.
  bool add_more(const BenchOptions& o);
  // Destroys them. Collective over `parent`; nothing may be in flight on them.
  void drop_more();
  size_t size() const { return comms_.size(); }
  const SoakComm& operator[](size_t k) const { return comms_[k]; }
  std::vector<SoakComm>::const_iterator begin() const { return comms_.begin(); }
  std::vector<SoakComm>::const_iterator end() const { return comms_.end(); }

 private:
  // A communicator over the ranks of `mpi`, or a place holder where this
  // rank is not in it (MPI_COMM_NULL).
  bool add(MPI_Comm mpi);

  MPI_Comm parent_;
  int rank_, nranks_;
  std::vector<SoakComm> comms_;
  std::vector<MPI_Comm> mpi_comms_;
};

}  // namespace tutti::apps
