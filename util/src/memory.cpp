#include "inlet/util/memory.hpp"

#include <malloc.h>

#include <cstddef>

// The allocator is the executable's choice (INLET_ALLOCATOR, or LD_PRELOAD), so each
// allocator's release call is a weak reference: null unless that allocator is in the
// process.
extern "C" {
int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp, std::size_t newlen)
    __attribute__((weak));
void MallocExtension_ReleaseFreeMemory() __attribute__((weak));
}

namespace inlet::util {

void release_free_heap() noexcept {
  if (mallctl != nullptr)
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);  // 4096: MALLCTL_ARENAS_ALL
  else if (MallocExtension_ReleaseFreeMemory != nullptr)
    MallocExtension_ReleaseFreeMemory();
  else
    ::malloc_trim(0);
}

}  // namespace inlet::util
