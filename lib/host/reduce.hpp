// Elementwise reduction of host buffers, vectorised for the CPU it runs on
// (AVX-512, AVX2+F16C or portable code, chosen once at start-up).
#pragma once

#include <cstddef>
#include <string_view>

#include "base/types.hpp"

namespace tutti {

// dst[i] = a[i] op b[i] for i < count. Op::Avg reduces like Op::Sum (the
// division happens once, in host_divide). dst may be exactly a or exactly b;
// any other overlap is not allowed.
void host_reduce(void* dst, const void* a, const void* b, size_t count, Datatype dt, Op op);

// dst[i] = dst[i] / divisor: the final step of Op::Avg.
void host_divide(void* dst, size_t count, Datatype dt, int divisor);

// Which instruction set host_reduce uses here: "avx512", "avx2" or "generic".
// TUTTI_HOST_ISA=generic|avx2|avx512 lowers it (never above what the CPU has).
std::string_view host_reduce_isa();

// For tests and benchmarks: make host_reduce use instruction set `isa`
// ("generic", "avx2" or "avx512") from now on, in the whole process. Returns
// false, changing nothing, where the name is unknown or this CPU or build
// lacks that instruction set.
bool host_reduce_set_isa(std::string_view isa);

}  // namespace tutti
