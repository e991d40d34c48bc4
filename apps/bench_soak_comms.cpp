#include "bench_soak_comms.hpp"

#include <cstdio>

namespace tutti::apps {

bool SoakComms::add_more(const BenchOptions& o) {
  for (long k = 1; k < o.soak_comms; ++k)
    if (!add(parent_)) return false;
  if (!o.soak_split) return true;
  // One per parity of the rank (every rank in one of the two: a call drawn
  // for it runs on both halves at once), and one of every rank but the
  // last (which skips the calls drawn for it).
  MPI_Comm halves = MPI_COMM_NULL, all_but_last = MPI_COMM_NULL;
  MPI_Comm_split(parent_, rank_ % 2, rank_, &halves);
  mpi_comms_.push_back(halves);
  if (!add(halves)) return false;
  if (nranks_ == 1) return true;
  MPI_Comm_split(parent_, rank_ < nranks_ - 1 ? 0 : MPI_UNDEFINED, rank_, &all_but_last);
  if (all_but_last != MPI_COMM_NULL) mpi_comms_.push_back(all_but_last);
  return add(all_but_last);
}

void SoakComms::drop_more() {
  for (size_t k = 1; k < comms_.size(); ++k)
    if (comms_[k].comm && tutti_comm_destroy(comms_[k].comm) != TUTTI_SUCCESS)
      std::fprintf(stderr, "soak: tutti_comm_destroy: %s\n", tutti_last_error());
  comms_.resize(1);
  for (MPI_Comm& mpi : mpi_comms_) MPI_Comm_free(&mpi);
  mpi_comms_.clear();
}

bool SoakComms::add(MPI_Comm mpi) {
  SoakComm more;
  if (mpi != MPI_COMM_NULL) {
    MPI_Comm_rank(mpi, &more.rank);
    MPI_Comm_size(mpi, &more.nranks);
    const int st = tutti_comm_create(mpi, &more.comm);
    if (st != TUTTI_SUCCESS) {
      std::fprintf(stderr, "soak: tutti_comm_create: %s: %s\n", tutti_strerror(st),
                   tutti_last_error());
      return false;
    }
  }
  comms_.push_back(more);
  return true;
}

}  // namespace tutti::apps
