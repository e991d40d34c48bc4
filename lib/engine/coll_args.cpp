#include "engine/coll_args.hpp"

#include <numeric>

#include "base/status.hpp"

namespace tutti {

size_t message_bytes(const CollArgs& a, int nranks) {
  const size_t block = a.count * a.elem_size();
  const size_t p = static_cast<size_t>(nranks);
  switch (a.coll) {
    case Collective::Allreduce:
    case Collective::Reduce:
    case Collective::Bcast: return block;
    case Collective::Allgather:
    case Collective::ReduceScatter:
    case Collective::Gather:
    case Collective::Scatter:
    case Collective::Alltoall: return block * p;
    case Collective::Alltoallv: {
      const size_t sent = std::accumulate(a.send_counts.begin(), a.send_counts.end(), size_t{0});
      const size_t received =
          std::accumulate(a.recv_counts.begin(), a.recv_counts.end(), size_t{0});
      return std::max(sent, received) * a.elem_size();
    }
    case Collective::Barrier: return 0;
  }
  return 0;
}

size_t count_for_message_bytes(Collective c, uint64_t bytes, Datatype dt, int nranks) {
  const size_t es = datatype_size(dt);
  switch (c) {
    case Collective::Allreduce:
    case Collective::Reduce:
    case Collective::Bcast: return bytes / es;
    case Collective::Barrier: return 0;
    default: return bytes / es / static_cast<size_t>(nranks);
  }
}

std::string describe(const CollArgs& a) {
  std::string out = str(collective_name(a.coll));
  if (a.coll == Collective::Barrier) return out;
  if (a.coll != Collective::Alltoallv) out += str(" count=", a.count);
  out += str(" dtype=", datatype_name(a.dtype));
  if (is_reduction(a.coll)) out += str(" op=", op_name(a.op));
  if (has_root(a.coll)) out += str(" root=", a.root);
  if (a.in_place) out += " in_place";
  if (a.memory != MemoryType::Host) out += str(" memory=", memory_type_name(a.memory));
  return out;
}

static size_t extent(std::span<const size_t> counts, std::span<const size_t> displs) {
  size_t end = 0;
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i]) end = std::max(end, displs[i] + counts[i]);
  return end;
}

BufferShape buffer_shape(const CollArgs& a, int rank, int nranks) {
  const size_t es = a.elem_size();
  const size_t block = a.count * es;
  const size_t all = block * static_cast<size_t>(nranks);
  const bool root = rank == a.root;
  switch (a.coll) {
    case Collective::Allreduce: return {block, block, true, true};
    case Collective::Reduce: return {block, root ? block : 0, true, root};
    case Collective::Bcast: return {0, block, false, true};
    case Collective::Allgather: return {block, all, true, true};
    case Collective::ReduceScatter: return {all, block, true, true};
    case Collective::Gather: return {block, root ? all : 0, true, root};
    case Collective::Scatter: return {root ? all : 0, block, root, true};
    case Collective::Alltoall: return {all, all, true, true};
    case Collective::Alltoallv:
      return {extent(a.send_counts, a.send_displs) * es, extent(a.recv_counts, a.recv_displs) * es,
              true, true};
    case Collective::Barrier: return {};
  }
  return {};
}

InPlaceLayout in_place_layout(const CollArgs& a, int rank) {
  const size_t block = a.count * a.elem_size();
  switch (a.coll) {
    case Collective::Allgather: return {true, block * static_cast<size_t>(rank)};
    case Collective::Gather: return {true, block * static_cast<size_t>(a.root)};
    case Collective::Scatter: return {false, block * static_cast<size_t>(a.root)};
    default: return {true, 0};
  }
}

HeldArgs::HeldArgs(const CollArgs& args) : args_(args) {
  std::span<const size_t>* spans[] = {&args_.send_counts, &args_.send_displs, &args_.recv_counts,
                                      &args_.recv_displs, &args_.node_send_counts};
  size_t total = 0;
  for (const auto* s : spans) total += s->size();
  if (total == 0) return;
  arrays_.reserve(total);  // no reallocation below: the spans point into it
  for (auto* s : spans) {
    const size_t at = arrays_.size();
    arrays_.insert(arrays_.end(), s->begin(), s->end());
    *s = std::span<const size_t>(arrays_.data() + at, s->size());
  }
}

}  // namespace tutti
