#include "transport/sim.hpp"

#include <cstring>

namespace tutti {

size_t SimNetwork::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const auto& [key, q] : sends_) n += q.size();
  return n;
}

void SimNetwork::complete(int owner, Completion* c, size_t bytes, Status status,
                          std::string error) {
  if (threaded_) {
    finished_[static_cast<size_t>(owner)].push_back({c, bytes, status, std::move(error)});
    return;
  }
  c->bytes = bytes;
  c->status = status;
  c->error = std::move(error);
  c->done = true;
}

void SimNetwork::deliver(PendingSend& s, PendingRecv& r, int source, int destination) {
  const void* data = s.copy.empty() ? s.data : s.copy.data();
  if (s.bytes != r.bytes && !(accept_shorter_ && s.bytes < r.bytes)) {
    complete(destination, r.completion, s.bytes, TUTTI_ERR_MISMATCH,
             str("message of ", s.bytes, " bytes for a receive of ", r.bytes));
  } else {
    if (s.bytes) std::memcpy(r.buf, data, s.bytes);
    complete(destination, r.completion, s.bytes, TUTTI_SUCCESS, {});
  }
  if (s.completion) complete(source, s.completion, s.bytes, TUTTI_SUCCESS, {});
  ++delivered_;
}

int SimTransport::progress() {
  if (!net_.threaded_) return 0;
  std::vector<SimNetwork::Finished> mine;
  {
    std::lock_guard<std::mutex> lock(net_.mutex_);
    mine.swap(net_.finished_[static_cast<size_t>(rank_)]);
  }
  for (SimNetwork::Finished& f : mine) {
    f.completion->bytes = f.bytes;
    f.completion->status = f.status;
    f.completion->error = std::move(f.error);
    f.completion->done = true;
  }
  return static_cast<int>(mine.size());
}

Status SimTransport::send(int peer, Tag tag, const void* buf, size_t bytes, MemoryType,
                          Completion* c) {
  if (peer < 0 || peer >= net_.nranks())
    return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, str("sim: no rank ", peer));
  std::lock_guard<std::mutex> lock(net_.mutex_);
  SimNetwork::Key key{rank_, peer, tag};
  SimNetwork::PendingSend s{buf, {}, bytes, nullptr};
  if (net_.mode() == SimNetwork::Mode::Eager) {
    s.copy.assign(static_cast<const char*>(buf), static_cast<const char*>(buf) + bytes);
    c->done = true;
  } else {
    s.completion = c;
  }
  auto it = net_.recvs_.find(key);
  if (it != net_.recvs_.end() && !it->second.empty()) {
    SimNetwork::PendingRecv r = it->second.front();
    it->second.pop_front();
    net_.deliver(s, r, rank_, peer);
  } else {
    net_.sends_[key].push_back(std::move(s));
  }
  return TUTTI_SUCCESS;
}

Status SimTransport::recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType,
                          Completion* c) {
  // The simulator runs collective schedules, which always name their peers.
  if (peer == kAnySource)
    return set_last_error(TUTTI_ERR_UNSUPPORTED, "sim: no receives from any source");
  if (peer < 0 || peer >= net_.nranks())
    return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, str("sim: no rank ", peer));
  std::lock_guard<std::mutex> lock(net_.mutex_);
  SimNetwork::Key key{peer, rank_, tag};
  SimNetwork::PendingRecv r{buf, bytes, c};
  auto it = net_.sends_.find(key);
  if (it != net_.sends_.end() && !it->second.empty()) {
    SimNetwork::PendingSend s = std::move(it->second.front());
    it->second.pop_front();
    net_.deliver(s, r, peer, rank_);
  } else {
    net_.recvs_[key].push_back(r);
  }
  return TUTTI_SUCCESS;
}

void SimTransport::cancel(Completion* c) {
  std::lock_guard<std::mutex> lock(net_.mutex_);
  auto& finished = net_.finished_[static_cast<size_t>(rank_)];
  std::erase_if(finished, [c](const SimNetwork::Finished& f) { return f.completion == c; });
  auto drop = [c](auto& queues, auto completion_of) {
    for (auto& [key, q] : queues)
      for (auto it = q.begin(); it != q.end(); ++it)
        if (completion_of(*it) == c) {
          q.erase(it);
          return true;
        }
    return false;
  };
  drop(net_.recvs_, [](const SimNetwork::PendingRecv& r) { return r.completion; });
  drop(net_.sends_, [](const SimNetwork::PendingSend& s) { return s.completion; });
  if (!c->done) {
    c->done = true;
    c->status = TUTTI_ERR_TRANSPORT;
    c->error = "cancelled";
  }
}

}  // namespace tutti
