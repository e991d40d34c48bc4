#include "transport/mpi.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>

#include "base/log.hpp"
#include "transport/mpi_types.hpp"

namespace tutti {
namespace {
// Largest piece of one MPI message (an int count of bytes, kept aligned).
constexpr size_t kMaxPiece = size_t{1} << 30;
}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm) {
  check_mpi(MPI_Comm_dup(comm, &coll_comm_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_dup(comm, &p2p_comm_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_dup(comm, &control_comm_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(coll_comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_set_errhandler(p2p_comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_set_errhandler(control_comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &nranks_), "MPI_Comm_size");
  // MPI_TAG_UB is an attribute of MPI_COMM_WORLD (MPI 4.0, 7.1), valid on
  // every communicator but not found on all: Open MPI has it on the world's
  // duplicates, not on a split's. Read from `comm`, a split's 32767 kept only
  // the message index of a tag, so two collectives in flight between the
  // same pair matched each other's messages (soak --soak-split).
  int* ub = nullptr;
  int flag = 0;
  check_mpi(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag),
            "MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB)");
  if (flag && ub) tag_ub_ = *ub;
  if (static_cast<Tag>(tag_ub_) + 1 < (Tag{1} << (kTagIndexBits + 4)) && rank_ == 0)
    log_line(rank_, str("MPI transport: MPI_TAG_UB ", tag_ub_, " keeps fewer than 4 bits of a",
                        " collective's number in its tags; more than a few non-blocking",
                        " collectives in flight at once may match each other's messages"));
}

MpiTransport::~MpiTransport() {
  for (Pending* p : pending_) {
    free_requests(*p);
    delete p;
  }
  if (coll_comm_ != MPI_COMM_NULL) MPI_Comm_free(&coll_comm_);
  if (p2p_comm_ != MPI_COMM_NULL) MPI_Comm_free(&p2p_comm_);
  if (control_comm_ != MPI_COMM_NULL) MPI_Comm_free(&control_comm_);
}

void MpiTransport::map_tag(Tag tag, MPI_Comm* comm, int* mpi_tag) const {
  if (tag & kTagUserFlag) {
    // Control messages (abort notices) on a communicator of their own: user
    // tags fill every MPI tag.
    *comm = is_control_tag(tag) ? control_comm_ : p2p_comm_;
    *mpi_tag = static_cast<int>(tag & 0x7fffffff);
    return;
  }
  // Collective tags are 40 bits; MPI guarantees only 15. Keep the message
  // index whole and as many low bits of the sequence number as fit (11 with
  // Open MPI's 2^31 - 1): a clash needs that many collectives outstanding at
  // once between the same pair. An MPI whose bound leaves fewer than 4 bits
  // is named at creation (in the constructor).
  *comm = coll_comm_;
  *mpi_tag = static_cast<int>(tag % (static_cast<Tag>(tag_ub_) + 1));
}

Status MpiTransport::post(bool is_send, int peer, Tag tag, void* buf, size_t bytes,
                          Completion* c) {
  const bool any_source = !is_send && peer == kAnySource && is_user_tag(tag);
  if (!any_source && (peer < 0 || peer >= nranks_))
    return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, str("no rank ", peer));
  auto* p = new Pending{.completion = c, .is_recv = !is_send,
                        .peer = any_source ? MPI_ANY_SOURCE : peer,
                        .buf = static_cast<char*>(buf), .bytes = bytes};
  map_tag(tag, &p->comm, &p->mpi_tag);
  const size_t pieces = std::max<size_t>(1, (bytes + kMaxPiece - 1) / kMaxPiece);
  p->requests.resize(pieces, MPI_REQUEST_NULL);
  const int rc = post_pieces(is_send, *p, any_source ? 1 : pieces);
  if (rc != MPI_SUCCESS) {
    free_requests(*p);
    delete p;
    return set_last_error(TUTTI_ERR_TRANSPORT, str(is_send ? "MPI_Isend" : "MPI_Irecv",
                                                   " failed: ", mpi_error_string(rc)));
  }
  c->handle = p;
  pending_.push_back(p);
  return TUTTI_SUCCESS;
}

int MpiTransport::post_pieces(bool is_send, Pending& p, size_t until) {
  for (; p.posted < until; ++p.posted) {
    const size_t i = p.posted;
    char* at = p.buf + i * kMaxPiece;
    // A receive posts its full remaining size per piece so that a longer
    // message than expected is reported as truncated, not silently split.
    const int n = static_cast<int>(std::min(kMaxPiece, p.bytes - std::min(p.bytes, i * kMaxPiece)));
    const int rc = is_send ? MPI_Isend(at, n, MPI_BYTE, p.peer, p.mpi_tag, p.comm, &p.requests[i])
                           : MPI_Irecv(at, n, MPI_BYTE, p.peer, p.mpi_tag, p.comm, &p.requests[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

void MpiTransport::free_requests(Pending& p) {
  // A request still active could write into (a receive) or read from (a
  // send) the buffer after its owner got it back, so each is cancelled and
  // then completed before the buffer is let go. MPI completes a cancelled
  // receive locally, whatever its peer does (MPI 3.1, 3.8.4): it is waited
  // for. A send may not be cancellable (Open MPI cannot cancel one) and then
  // completes only when its peer takes it: it gets kSendGrace, then MPI
  // finishes it in the background (MPI_Request_free); it only reads.
  using Clock = std::chrono::steady_clock;
  constexpr auto kReceiveLimit = std::chrono::seconds(10);  // a broken MPI, not a peer
  constexpr auto kSendGrace = std::chrono::milliseconds(10);
  for (MPI_Request& r : p.requests) {
    if (r == MPI_REQUEST_NULL) continue;
    const bool cancelled = MPI_Cancel(&r) == MPI_SUCCESS;
    const auto give_up = Clock::now() + (p.is_recv && cancelled ? kReceiveLimit : kSendGrace);
    int done = 0;
    while (!done && MPI_Test(&r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && Clock::now() < give_up)
      if (!done) sched_yield();
    if (r == MPI_REQUEST_NULL) continue;
    // Only a broken MPI leaves a cancelled receive incomplete: said, not hidden.
    if (p.is_recv)
      log_line(rank_, str("MPI transport: a cancelled receive from rank ", p.peer,
                          " did not complete within 10 s; left to MPI"));
    MPI_Request_free(&r);  // a send not yet taken, or a failed test
  }
}

Status MpiTransport::send(int peer, Tag tag, const void* buf, size_t bytes, MemoryType,
                          Completion* c) {
  return post(true, peer, tag, const_cast<void*>(buf), bytes, c);
}

Status MpiTransport::recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType, Completion* c) {
  return post(false, peer, tag, buf, bytes, c);
}

int MpiTransport::progress() {
  int events = 0;
  for (size_t i = 0; i < pending_.size();) {
    Pending* p = pending_[i];
    bool all_done = true;
    for (MPI_Request& r : p->requests) {
      if (r == MPI_REQUEST_NULL) continue;
      int done = 0;
      MPI_Status status;
      status.MPI_SOURCE = MPI_ANY_SOURCE;  // stays so where MPI fills in nothing
      const int rc = MPI_Test(&r, &done, &status);
      if (rc != MPI_SUCCESS) {
        const int err = rc == MPI_ERR_IN_STATUS ? status.MPI_ERROR : rc;
        p->completion->status =
            err == MPI_ERR_TRUNCATE ? TUTTI_ERR_MISMATCH : TUTTI_ERR_TRANSPORT;
        p->completion->error = str("MPI message ", p->is_recv ? "receive" : "send",
                                   " failed: ", mpi_error_string(err));
        if (p->is_recv && status.MPI_SOURCE >= 0) p->completion->source = status.MPI_SOURCE;
        // The message has failed: its later pieces would never complete
        // (a truncated receive leaves them waiting for bytes that were
        // never sent), so they are cancelled and the completion reported.
        free_requests(*p);
        break;
      }
      if (!done) {
        all_done = false;
        break;  // pieces complete in order
      }
      if (p->is_recv) {
        int count = 0;
        if (const int count_rc = MPI_Get_count(&status, MPI_BYTE, &count);
            count_rc != MPI_SUCCESS || count == MPI_UNDEFINED) {
          p->completion->status = TUTTI_ERR_TRANSPORT;
          p->completion->error = str("MPI_Get_count on a received message failed: ",
                                     count_rc != MPI_SUCCESS ? mpi_error_string(count_rc)
                                                             : std::string("undefined count"));
          free_requests(*p);
          break;
        }
        p->received += static_cast<size_t>(count);
        p->completion->source = status.MPI_SOURCE;
        if (p->peer == MPI_ANY_SOURCE) {
          // The first piece of a receive from any source: the rest come
          // from the same sender.
          p->peer = status.MPI_SOURCE;
          const int post_rc = post_pieces(false, *p, p->requests.size());
          if (post_rc != MPI_SUCCESS) {
            p->completion->status = TUTTI_ERR_TRANSPORT;
            p->completion->error = str("MPI_Irecv failed: ", mpi_error_string(post_rc));
            free_requests(*p);
            break;
          }
        }
      }
    }
    if (!all_done) {
      ++i;
      continue;
    }
    p->completion->bytes = p->received;
    p->completion->handle = nullptr;
    p->completion->done = true;
    delete p;
    pending_[i] = pending_.back();
    pending_.pop_back();
    ++events;
  }
  return events;
}

void MpiTransport::cancel(Completion* c) {
  auto it = std::find_if(pending_.begin(), pending_.end(),
                         [c](const Pending* p) { return p->completion == c; });
  if (it == pending_.end()) return;
  Pending* p = *it;
  free_requests(*p);
  c->status = TUTTI_ERR_TRANSPORT;
  if (c->error.empty()) c->error = "cancelled";
  c->handle = nullptr;
  c->done = true;
  delete p;
  pending_.erase(it);
}

}  // namespace tutti
