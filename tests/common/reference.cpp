#include "reference.hpp"

#include <algorithm>
#include <cstring>
#include <utility>
#include <type_traits>

#include "base/status.hpp"
#include "host/dtype_dispatch.hpp"
#include "host/reduce_ops.hpp"

namespace tutti::testing {
namespace {

template <typename T>
T from_int(long long v) {
  if constexpr (std::is_same_v<T, Half>)
    return float_to_half(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, BFloat16>)
    return float_to_bfloat16(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Values whose reduction is exact in any order (see the header).
template <typename T>
T make_value(Op op, uint64_t h, int nranks) {
  constexpr bool is_signed = !std::is_unsigned_v<T>;  // Half/BFloat16 are "signed"
  switch (op) {
    case Op::Avg:
      if constexpr (kIsHalf<T>) {
        // Averages of 16-bit floats divide each input by p first
        // (premultiplies_average): k * p with k in {-1, 0, 1} divides
        // exactly where k * p is exact (bf16: p <= 256).
        if (nranks > 64 && h % 16 != 0) return from_int<T>(0);
        if (nranks > (std::is_same_v<T, BFloat16> ? 256 : 2048)) return from_int<T>(0);
        return from_int<T>((static_cast<long long>(h % 3) - 1) * nranks);
      }
      [[fallthrough]];
    case Op::Sum: {
      if constexpr (kIsHalf<T>) {
        // |sum| must stay within the exact integers of bf16 (256).
        if (nranks > 64 && h % 16 != 0) return from_int<T>(0);
        return from_int<T>(static_cast<long long>(h % 3) - 1);
      }
      const long long v = static_cast<long long>(h % 9);
      return from_int<T>(is_signed ? v - 4 : v);
    }
    case Op::Prod: {
      const uint64_t r = h % 8;
      if (r == 0) return from_int<T>(2);
      if (r == 1 && is_signed) return from_int<T>(-1);
      return from_int<T>(1);
    }
    case Op::Min:
    case Op::Max: {
      const long long v = static_cast<long long>(h % 201);
      if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>)
        return from_int<T>(is_signed ? v - 100 : v);
      else
        return from_int<T>(is_signed ? v - 100 : v * 1000);
    }
  }
  return from_int<T>(0);
}

template <typename T>
T load(const Bytes& b, size_t i) {
  T v;
  std::memcpy(&v, b.data() + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void store(Bytes& b, size_t i, T v) {
  std::memcpy(b.data() + i * sizeof(T), &v, sizeof(T));
}

// out[i] = inputs[0][off + i] op ... op inputs[P-1][off + i]
template <typename T>
Bytes reduce_all(const std::vector<Bytes>& inputs, size_t elem_offset, size_t count, Op op) {
  Bytes out(count * sizeof(T));
  const int p = static_cast<int>(inputs.size());
  const bool premultiplied = op == Op::Avg && kIsHalf<T> && p > 1;
  auto input = [&](size_t r, size_t i) {
    const T v = load<T>(inputs[r], elem_offset + i);
    return premultiplied ? FuncDivide<T>{p}(v) : v;
  };
  for (size_t i = 0; i < count; ++i) {
    T acc = input(0, i);
    for (size_t r = 1; r < inputs.size(); ++r) {
      const T v = input(r, i);
      switch (op) {
        case Op::Sum:
        case Op::Avg: acc = FuncSum<T>{}(acc, v); break;
        case Op::Prod: acc = FuncProd<T>{}(acc, v); break;
        case Op::Min: acc = FuncMin<T>{}(acc, v); break;
        case Op::Max: acc = FuncMax<T>{}(acc, v); break;
      }
    }
    if (op == Op::Avg && p > 1 && !premultiplied) acc = FuncDivide<T>{p}(acc);
    store<T>(out, i, acc);
  }
  return out;
}

Bytes reduce_block(const std::vector<Bytes>& inputs, size_t elem_offset, size_t count,
                   const CollArgs& a) {
  return visit_datatype(a.dtype, [&]<typename T>() {
    return reduce_all<T>(inputs, elem_offset, count, a.op);
  });
}

std::string format_element(const char* p, Datatype dt) {
  return visit_datatype(dt, [&]<typename T>() {
    T v;
    std::memcpy(&v, p, sizeof(T));
    if constexpr (std::is_same_v<T, Half>)
      return str(half_to_float(v));
    else if constexpr (std::is_same_v<T, BFloat16>)
      return str(bfloat16_to_float(v));
    else if constexpr (sizeof(T) == 1)
      return str(static_cast<int>(v));
    else
      return str(v);
  });
}

}  // namespace

Bytes make_input(const CollArgs& args, int rank, int nranks, size_t bytes, uint64_t seed) {
  Bytes out(bytes);
  visit_datatype(args.dtype, [&]<typename T>() {
    const size_t n = bytes / sizeof(T);
    const uint64_t base = mix(seed ^ (static_cast<uint64_t>(rank) << 32));
    for (size_t i = 0; i < n; ++i) store<T>(out, i, make_value<T>(args.op, mix(base + i), nranks));
  });
  return out;
}

std::vector<Bytes> reference_outputs(const CollArgs& args, int nranks,
                                     const std::vector<Bytes>& inputs) {
  return reference_outputs(std::vector<CollArgs>(static_cast<size_t>(nranks), args), inputs);
}

std::vector<Bytes> reference_outputs(const std::vector<CollArgs>& per_rank,
                                     const std::vector<Bytes>& inputs) {
  const CollArgs& a = per_rank.at(0);
  const int p = static_cast<int>(per_rank.size());
  const size_t es = a.elem_size();
  const size_t block = a.count * es;
  std::vector<Bytes> out(static_cast<size_t>(p));
  auto slice = [](const Bytes& b, size_t off, size_t len) {
    return Bytes(b.begin() + static_cast<long>(off), b.begin() + static_cast<long>(off + len));
  };
  switch (a.coll) {
    case Collective::Allreduce: {
      const Bytes r = reduce_block(inputs, 0, a.count, a);
      for (auto& o : out) o = r;
      break;
    }
    case Collective::Reduce: out[a.root] = reduce_block(inputs, 0, a.count, a); break;
    case Collective::Bcast:
      for (auto& o : out) o = inputs[a.root];
      break;
    case Collective::Allgather: {
      Bytes all;
      for (const Bytes& in : inputs) all.insert(all.end(), in.begin(), in.begin() + block);
      for (auto& o : out) o = all;
      break;
    }
    case Collective::ReduceScatter:
      for (int r = 0; r < p; ++r) out[r] = reduce_block(inputs, a.count * r, a.count, a);
      break;
    case Collective::Gather: {
      Bytes all;
      for (const Bytes& in : inputs) all.insert(all.end(), in.begin(), in.begin() + block);
      out[a.root] = all;
      break;
    }
    case Collective::Scatter:
      for (int r = 0; r < p; ++r) out[r] = slice(inputs[a.root], block * r, block);
      break;
    case Collective::Alltoall:
      for (int r = 0; r < p; ++r)
        for (int s = 0; s < p; ++s) {
          const Bytes piece = slice(inputs[s], block * r, block);
          out[r].insert(out[r].end(), piece.begin(), piece.end());
        }
      break;
    case Collective::Alltoallv:
      for (int r = 0; r < p; ++r) {
        const CollArgs& ar = per_rank[r];
        // In place, the gaps between blocks keep what the buffer held (the
        // input); otherwise the output starts zeroed.
        out[r] = Bytes(buffer_shape(ar, r, p).output_bytes, 0);
        if (ar.in_place)
          if (const size_t n = std::min(inputs[r].size(), out[r].size()); n > 0)
            std::memcpy(out[r].data(), inputs[r].data(), n);
        for (int s = 0; s < p; ++s) {
          const CollArgs& as = per_rank[s];
          const size_t n = as.send_counts[r] * es;
          if (n != ar.recv_counts[s] * es) fail(TUTTI_ERR_INTERNAL, "inconsistent alltoallv layout");
          if (n > 0)  // empty vectors may have null data()
            std::memcpy(out[r].data() + ar.recv_displs[s] * es,
                        inputs[s].data() + as.send_displs[r] * es, n);
        }
      }
      break;
    case Collective::Barrier: break;
  }
  return out;
}

long first_difference(const Bytes& got, const Bytes& want, Datatype dt, std::string* detail) {
  const size_t es = datatype_size(dt);
  if (got.size() != want.size()) {
    if (detail) *detail = str("size ", got.size(), " != expected ", want.size());
    return 0;
  }
  for (size_t i = 0; i < got.size() / es; ++i) {
    if (std::memcmp(got.data() + i * es, want.data() + i * es, es) != 0) {
      if (detail)
        *detail = str("element ", i, ": got ", format_element(got.data() + i * es, dt),
                      ", expected ", format_element(want.data() + i * es, dt));
      return static_cast<long>(i);
    }
  }
  return -1;
}

AlltoallvLayout alltoallv_layout(int rank, int nranks, size_t base, uint64_t seed,
                                 bool in_place, bool packed) {
  auto count_between = [&](int from, int to) -> size_t {
    if (base == 0) return 0;
    if (in_place && from > to) std::swap(from, to);
    return mix(seed ^ (static_cast<uint64_t>(from) * 1000003u + static_cast<uint64_t>(to))) %
           (2 * base + 1);
  };
  AlltoallvLayout l;
  const size_t p = static_cast<size_t>(nranks);
  l.send_counts.resize(p);
  l.send_displs.resize(p);
  l.recv_counts.resize(p);
  l.recv_displs.resize(p);
  size_t send_off = 0, recv_off = 0;
  const size_t gap = packed ? 0 : 1;
  for (int i = 0; i < nranks; ++i) {
    const int j = packed ? i : nranks - 1 - i;
    l.send_counts[j] = count_between(rank, j);
    l.send_displs[j] = send_off;
    send_off += l.send_counts[j] + gap;
    l.recv_counts[j] = count_between(j, rank);
    l.recv_displs[j] = recv_off;
    recv_off += l.recv_counts[j] + gap;
  }
  if (in_place) {
    l.send_counts = l.recv_counts;
    l.send_displs = l.recv_displs;
  }
  return l;
}

long count_wrong(const Bytes& got, const Bytes& want, Datatype dt) {
  const size_t es = datatype_size(dt);
  if (got.size() != want.size()) return static_cast<long>(std::max(got.size(), want.size()) / es);
  long wrong = 0;
  for (size_t i = 0; i < got.size(); i += es)
    if (std::memcmp(got.data() + i, want.data() + i, es) != 0) ++wrong;
  return wrong;
}

}  // namespace tutti::testing
