#include "safety/abort_channel.hpp"

namespace tutti {

namespace {
// How long the destructor polls for a cancelled receive or a notice in
// flight: a cancel completes at once or on the next progress; a small
// notice is sent eagerly.
constexpr int kSettlePolls = 100000;
}  // namespace

AbortChannel::AbortChannel(Transport& transport)
    : transport_(transport), receive_(std::make_unique<Completion>()), notice_(transport.rank()) {
  const Status st = transport_.recv(kAnySource, kAbortNoticeTag, &from_, sizeof from_,
                                    MemoryType::Host, receive_.get());
  if (st != TUTTI_SUCCESS)
    fail(st, "posting the receive of abort notices on the ", transport_.name(),
         " transport: ", last_error());
}

AbortChannel::~AbortChannel() {
  if (!receive_->done) transport_.cancel(receive_.get());
  // A completion the transport still holds after the bounded wait must
  // outlive it (the transport may write to it as it shuts down): left.
  if (!settle(*receive_)) (void)receive_.release();
  if (sends_) {
    bool all_settled = true;
    for (int r = 0; r < transport_.nranks(); ++r)
      if (r != transport_.rank()) all_settled &= settle(sends_[static_cast<size_t>(r)]);
    if (!all_settled) (void)sends_.release();
  }
}

bool AbortChannel::settle(Completion& c) {
  for (int polls = 0; !c.done && polls < kSettlePolls; ++polls) transport_.progress();
  return c.done;
}

void AbortChannel::notify_all() {
  if (sends_) return;
  const int n = transport_.nranks();
  sends_ = std::make_unique<Completion[]>(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    Completion& c = sends_[static_cast<size_t>(r)];
    if (r == transport_.rank() ||
        transport_.send(r, kAbortNoticeTag, &notice_, sizeof notice_, MemoryType::Host, &c) !=
            TUTTI_SUCCESS)
      c.done = true;  // nothing posted: nothing to wait for
  }
}

std::optional<int> AbortChannel::poll() {
  if (received_ || !receive_) return received_;
  if (!receive_->done) transport_.progress();
  if (receive_->done && receive_->status == TUTTI_SUCCESS) received_ = from_;
  return received_;
}

}  // namespace tutti
