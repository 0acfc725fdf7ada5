// Handing freed heap memory back to the system after a wave of connections, whichever
// allocator the executable linked (jemalloc, tcmalloc, or glibc's malloc).
//
// Thread-safety: may be called from any thread; the allocators serialise it themselves.
#pragma once

namespace inlet::util {

/// jemalloc: purges every arena's unused dirty pages now (not after its decay time);
/// tcmalloc: releases its page heap's free spans; glibc: malloc_trim(0).
void release_free_heap() noexcept;

}  // namespace inlet::util
