#include "host/reduce.hpp"

#include <atomic>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "host/reduce_kernels.hpp"

#if TUTTI_X86_KERNELS
#include <cpuid.h>
#endif

namespace tutti {
namespace {

// In increasing order of capability, so that "lowering" is a comparison.
enum class Isa { Generic, Avx2, Avx512 };
constexpr std::string_view kIsaNames[] = {"generic", "avx2", "avx512"};

std::optional<Isa> parse_isa(std::string_view name) {
  for (int i = 0; i < 3; ++i)
    if (kIsaNames[i] == name) return static_cast<Isa>(i);
  return std::nullopt;
}

// The best table this binary has and this CPU can run. The checks cover
// every -m flag the ISA's TU is compiled with, since the compiler may use any
// of them anywhere in it (libgcc also checks that the OS saves the state).
#if TUTTI_X86_KERNELS
// F16C straight from CPUID (leaf 1, ECX bit 29): clang's
// __builtin_cpu_supports does not know "f16c".
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}
#endif

Isa best_isa() {
#if TUTTI_X86_KERNELS
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    cpu_has_f16c();
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq");
  if (avx512) return Isa::Avx512;
  if (avx2) return Isa::Avx2;
#endif
  return Isa::Generic;
}

const HostReduceTable& table_for([[maybe_unused]] Isa isa) {
#if TUTTI_X86_KERNELS
  if (isa == Isa::Avx512) return host_reduce_table_avx512();
  if (isa == Isa::Avx2) return host_reduce_table_avx2();
#endif
  assert(isa == Isa::Generic);
  return host_reduce_table_generic();
}

const HostReduceTable* startup_table() {
  const Isa best = best_isa();
  const char* env = std::getenv("TUTTI_HOST_ISA");
  if (!env || !*env) return &table_for(best);
  const std::optional<Isa> wanted = parse_isa(env);
  if (wanted && *wanted <= best) return &table_for(*wanted);
  // The variable may only lower the choice: running code the CPU lacks
  // would crash, so say so once and carry on with what works.
  const char* name = kIsaNames[static_cast<int>(best)].data();
  if (!wanted)
    std::fprintf(stderr, "tutti: TUTTI_HOST_ISA=%s is not generic, avx2 or avx512; using %s\n",
                 env, name);
  else
    std::fprintf(stderr, "tutti: TUTTI_HOST_ISA=%s is beyond this CPU or build; using %s\n", env,
                 name);
  return &table_for(best);
}

std::atomic<const HostReduceTable*>& active_table() {
  // Chosen on first use (thread-safe static init); an atomic so that
  // host_reduce_set_isa can switch it. The tables themselves are constant.
  static std::atomic<const HostReduceTable*> table{startup_table()};
  return table;
}

const HostReduceTable& table() { return *active_table().load(std::memory_order_relaxed); }

}  // namespace

void host_reduce(void* dst, const void* a, const void* b, size_t count, Datatype dt, Op op) {
  assert(is_valid_datatype(static_cast<int>(dt)) && is_valid_op(static_cast<int>(op)));
  const int op_index = static_cast<int>(op == Op::Avg ? Op::Sum : op);
  table().reduce[static_cast<int>(dt)][op_index](dst, a, b, count);
}

void host_divide(void* dst, size_t count, Datatype dt, int divisor) {
  assert(is_valid_datatype(static_cast<int>(dt)) && divisor != 0);
  table().divide[static_cast<int>(dt)](dst, count, divisor);
}

std::string_view host_reduce_isa() { return table().isa; }

bool host_reduce_set_isa(std::string_view isa) {
  const std::optional<Isa> wanted = parse_isa(isa);
  if (!wanted || *wanted > best_isa()) return false;
  active_table().store(&table_for(*wanted), std::memory_order_relaxed);
  return true;
}

}  // namespace tutti
