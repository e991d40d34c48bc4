// Schedules over MPI point-to-point (MPI_Isend/MPI_Irecv) on private
// duplicates of the user's communicator: one for collective messages, one
// for user point-to-point messages (so user tags pass through unchanged),
// one for tutti's control messages (abort notices).
#pragma once

#include <mpi.h>

#include <vector>

#include "transport/transport.hpp"

namespace tutti {

class MpiTransport : public Transport {
 public:
  // Collective over `comm`: duplicates it (twice).
  explicit MpiTransport(MPI_Comm comm);
  ~MpiTransport() override;

  std::string_view name() const override { return "mpi"; }
  bool polls_mpi() const override { return true; }
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  Status send(int peer, Tag tag, const void* buf, size_t bytes, MemoryType mem,
              Completion* c) override;
  Status recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType mem, Completion* c) override;
  int progress() override;
  void cancel(Completion* c) override;

 private:
  // A message may need several MPI messages (MPI counts are ints); they share
  // the tag, and MPI's ordering rule keeps them in order. A receive from any
  // source posts its first piece only; the rest follow from the rank that
  // first piece came from, once it is known.
  struct Pending {
    Completion* completion;
    std::vector<MPI_Request> requests;
    size_t received = 0;
    bool is_recv = false;
    int peer = 0;             // MPI_ANY_SOURCE until the first piece is in
    char* buf = nullptr;
    size_t bytes = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    int mpi_tag = 0;
    size_t posted = 0;        // pieces posted so far
  };
  Status post(bool is_send, int peer, Tag tag, void* buf, size_t bytes, Completion* c);
  // Posts pieces [p.posted, until); MPI's error code (pieces posted stay).
  int post_pieces(bool is_send, Pending& p, size_t until);
  // Cancels and frees every request still held.
  void free_requests(Pending& p);
  void map_tag(Tag tag, MPI_Comm* comm, int* mpi_tag) const;

  MPI_Comm coll_comm_ = MPI_COMM_NULL, p2p_comm_ = MPI_COMM_NULL, control_comm_ = MPI_COMM_NULL;
  int rank_ = 0, nranks_ = 1;
  int tag_ub_ = 32767;
  std::vector<Pending*> pending_;
};

}  // namespace tutti
