#include "trafo/util/memory.h"

#include <cstddef>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// jemalloc's control interface: defined where the binary links jemalloc, null elsewhere (tests,
// sanitizer builds).
extern "C" int mallctl(const char* name, void* old_value, size_t* old_length, void* new_value,
                       size_t new_length) __attribute__((weak));

namespace trafo::util {

void release_free_memory() {
  if (mallctl != nullptr) {
    // "arena.<MALLCTL_ARENAS_ALL>.purge", MALLCTL_ARENAS_ALL being 4096: every arena.
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
    return;
  }
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace trafo::util
