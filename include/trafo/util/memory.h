// The allocator's freed pages, handed back to the kernel at a quiet moment.
#pragma once

namespace trafo::util {

// Hands the pages that freed memory keeps back to the kernel: jemalloc's arenas are purged where the
// binary links it (CMakeLists.txt; it keeps freed pages between steps, main.cpp's malloc_conf), and
// glibc's heap is trimmed elsewhere. Training calls it after each validation, whose decoding leaves
// blocks of other shapes than the steps' behind, so that resident memory stays flat over a run at the
// cost of faulting one step's activations in again.
void release_free_memory();

}  // namespace trafo::util
