#include "transport_sim.hpp"

#include <cstring>

namespace tutti {

size_t SimNetwork::in_flight() const {
  size_t n = 0;
  for (const auto& [key, q] : sends_) n += q.size();
  return n;
}

void SimNetwork::deliver(PendingSend& s, PendingRecv& r) {
  const void* data = s.copy.empty() ? s.data : s.copy.data();
  r.completion->bytes = s.bytes;
  if (s.bytes != r.bytes) {
    r.completion->status = TUTTI_ERR_MISMATCH;
    r.completion->error = str("message of ", s.bytes, " bytes for a receive of ", r.bytes);
  } else if (s.bytes) {
    std::memcpy(r.buf, data, s.bytes);
  }
  r.completion->done = true;
  if (s.completion) s.completion->done = true;
  ++delivered_;
}

Status SimTransport::send(int peer, Tag tag, const void* buf, size_t bytes, MemoryType,
                          Completion* c) {
  if (peer < 0 || peer >= net_.nranks())
    return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, str("sim: no rank ", peer));
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
    net_.deliver(s, r);
  } else {
    net_.sends_[key].push_back(std::move(s));
  }
  return TUTTI_SUCCESS;
}

Status SimTransport::recv(int peer, Tag tag, void* buf, size_t bytes, MemoryType,
                          Completion* c) {
  if (peer < 0 || peer >= net_.nranks())
    return set_last_error(TUTTI_ERR_INVALID_ARGUMENT, str("sim: no rank ", peer));
  SimNetwork::Key key{peer, rank_, tag};
  SimNetwork::PendingRecv r{buf, bytes, c};
  auto it = net_.sends_.find(key);
  if (it != net_.sends_.end() && !it->second.empty()) {
    SimNetwork::PendingSend s = std::move(it->second.front());
    it->second.pop_front();
    net_.deliver(s, r);
  } else {
    net_.recvs_[key].push_back(r);
  }
  return TUTTI_SUCCESS;
}

void SimTransport::cancel(Completion* c) {
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
