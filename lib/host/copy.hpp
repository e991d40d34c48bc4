// Copies between host buffers, safe from a slow path of the C library's
// memcpy on some CPUs.
//
// Why not plain memcpy: glibc 2.36 copies 2 KiB-1 MiB with `rep movsb` on
// CPUs that advertise fast string moves (FSRM, e.g. AMD Zen 3/4). There,
// when the destination is not at the same offset within a 64-byte line as
// the source, `rep movsb` runs 10-20x slower (measured on this project's
// AMD EPYC VMs: 32 KiB in 14 us instead of 0.7 us, 2.5 GB/s). Which case a
// collective hits depends on where the user's buffers lie relative to
// tutti's, which tutti does not control. host_copy keeps memcpy where it is
// fast and uses an explicit vector loop otherwise.
#pragma once

#include <cstddef>

namespace tutti {

// memmove semantics: the ranges may overlap.
void host_copy(void* dst, const void* src, size_t bytes);

// From this size on host_copy streams (non-overlapping ranges): an eighth
// of the last-level cache as Linux reports it (sysfs; cpuid, which glibc
// reads, can be wrong in VMs: 320 MiB here against 32 MiB), 4 MiB where it
// reports none. An eighth: the ranks of a node share that cache, and a
// copy's source and destination both pass through it.
size_t host_streaming_copy_min_bytes();

// Like host_copy, with non-temporal stores: the destination does not stay
// dirty in this core's caches (for data another core reads next).
void host_copy_streaming(void* dst, const void* src, size_t bytes);

}  // namespace tutti
