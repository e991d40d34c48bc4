#include "algos/node_shm.hpp"

#include <algorithm>

namespace tutti::algos {
namespace {

// dst = value(leader) op the others' values in local rank order. The
// leader's own value first, because it may be dst itself (in place): every
// later step reads dst only where it writes it.
template <typename Value>
void append_reduce_leader_first(ScheduleBuilder& b, int leader, BufRef dst, size_t bytes,
                                Value value) {
  bool first = true;
  for (int q = 0; q < b.nranks(); ++q) {
    if (q == leader) continue;
    b.reduce(dst, first ? value(leader) : dst, value(q), bytes);
    first = false;
  }
}

}  // namespace

void append_node_reduce_to(ScheduleBuilder& b, int leader, BufRef src, BufRef dst, size_t bytes,
                           size_t slot) {
  const int l = b.nranks(), me = b.rank();
  if (shm_fits_inline(bytes, l)) {
    if (me != leader) {
      b.shm_signal(leader, src, bytes);
      b.end_round();
      return;
    }
    // The others' vectors land in scratch, by local rank (the leader's own
    // stays in src).
    const BufRef values = b.scratch(static_cast<size_t>(l - 1) * bytes);
    auto value = [&](int q) {
      return q == leader ? src : values + static_cast<size_t>(q < leader ? q : q - 1) * bytes;
    };
    for (int q = 0; q < l; ++q)
      if (q != leader) b.shm_wait(q, value(q), bytes);
    b.end_round();
    append_reduce_leader_first(b, leader, dst, bytes, value);
    return;
  }
  const int parity = b.begin_shm_chunk();
  if (me != leader) {
    b.copy(node_slot(b, parity, me, slot), src, bytes);
    b.shm_signal(leader);
    b.end_round();
    return;
  }
  for (int q = 0; q < l; ++q)
    if (q != leader) b.shm_wait(q);
  b.end_round();
  auto value = [&](int q) { return q == leader ? src : node_slot(b, parity, q, slot); };
  append_reduce_leader_first(b, leader, dst, bytes, value);
}

void append_node_bcast_from(ScheduleBuilder& b, int leader, BufRef buf, size_t bytes, size_t slot) {
  const int l = b.nranks(), me = b.rank();
  if (shm_fits_inline(bytes, l)) {
    if (me == leader) {
      for (int q = 0; q < l; ++q)
        if (q != leader) b.shm_signal(q, buf, bytes);
    } else {
      b.shm_wait(leader, buf, bytes);
    }
    b.end_round();
    return;
  }
  const int parity = b.begin_shm_chunk();
  const BufRef from = node_slot(b, parity, leader, slot);
  if (me == leader) {
    b.copy(from, buf, bytes);
    for (int q = 0; q < l; ++q)
      if (q != leader) b.shm_signal(q);
    b.end_round();
    return;
  }
  b.shm_wait(leader);
  b.end_round();
  b.copy(buf, from, bytes);
}

void append_node_bcast(ScheduleBuilder& b, int leader, BufRef buf, size_t bytes, size_t slot) {
  if (shm_fits_inline(bytes, b.nranks())) return append_node_bcast_from(b, leader, buf, bytes, slot);
  b.note_slot_area(static_cast<size_t>(b.nranks()) * slot);
  for (size_t off = 0; off < bytes; off += slot) {
    const size_t c = std::min(slot, bytes - off);
    const int parity = b.begin_shm_chunk();
    const BufRef from = node_slot(b, parity, leader, slot);
    if (b.rank() == leader) b.copy(from, buf + off, c);
    append_shm_sync_all(b);
    if (b.rank() != leader) b.copy(buf + off, from, c);
  }
}

void append_node_reduce(ScheduleBuilder& b, int leader, BufRef src, BufRef dst, size_t bytes,
                        size_t slot) {
  const int l = b.nranks(), me = b.rank();
  if (shm_fits_inline(bytes, l)) return append_node_reduce_to(b, leader, src, dst, bytes, slot);
  b.note_slot_area(static_cast<size_t>(l) * slot);
  for (size_t off = 0; off < bytes; off += slot) {
    const size_t c = std::min(slot, bytes - off);
    const int parity = b.begin_shm_chunk();
    if (me != leader) b.copy(node_slot(b, parity, me, slot), src + off, c);
    append_shm_sync_all(b);
    if (me != leader) continue;
    auto value = [&](int q) { return q == leader ? src + off : node_slot(b, parity, q, slot); };
    append_reduce_leader_first(b, leader, dst + off, c, value);
  }
}

void append_node_scatter(ScheduleBuilder& b, int leader, const std::function<BufRef(int)>& block,
                         BufRef dst, size_t bytes, size_t slot) {
  const int l = b.nranks(), me = b.rank();
  if (shm_fits_inline(bytes, l)) {
    if (me == leader) {
      for (int q = 0; q < l; ++q)
        if (q != leader) b.shm_signal(q, block(q), bytes);
    } else {
      b.shm_wait(leader, dst, bytes);
    }
    b.end_round();
    return;
  }
  b.note_slot_area(static_cast<size_t>(l) * slot);
  for (size_t off = 0; off < bytes; off += slot) {
    const size_t c = std::min(slot, bytes - off);
    const int parity = b.begin_shm_chunk();
    if (me == leader)
      for (int q = 0; q < l; ++q)
        if (q != leader) b.copy(node_slot(b, parity, q, slot), block(q) + off, c);
    append_shm_sync_all(b);
    if (me != leader) b.copy(dst + off, node_slot(b, parity, me, slot), c);
  }
}

void append_node_gather(ScheduleBuilder& b, int leader, BufRef src,
                        const std::function<BufRef(int)>& block, size_t bytes, size_t slot) {
  const int l = b.nranks(), me = b.rank();
  if (shm_fits_inline(bytes, l)) {
    if (me == leader) {
      for (int q = 0; q < l; ++q)
        if (q != leader) b.shm_wait(q, block(q), bytes);
    } else {
      b.shm_signal(leader, src, bytes);
    }
    b.end_round();
    return;
  }
  b.note_slot_area(static_cast<size_t>(l) * slot);
  for (size_t off = 0; off < bytes; off += slot) {
    const size_t c = std::min(slot, bytes - off);
    const int parity = b.begin_shm_chunk();
    if (me != leader) b.copy(node_slot(b, parity, me, slot), src + off, c);
    append_shm_sync_all(b);
    if (me == leader)
      for (int q = 0; q < l; ++q)
        if (q != leader) b.copy(block(q) + off, node_slot(b, parity, q, slot), c);
  }
}

}  // namespace tutti::algos
