// Options for the allocator inletd links (INLET_ALLOCATOR). jemalloc reads the
// global `malloc_conf` at its start; the MALLOC_CONF environment variable still
// overrides it.
#ifdef INLET_ALLOCATOR_JEMALLOC
extern "C" {
// A background thread purges freed pages after 1 s instead of waiting for
// allocations to drive the decay: memory an attack held comes back while the
// server is quiet. muzzy_decay_ms 0: purged pages go back at once (MADV_DONTNEED).
__attribute__((used)) const char* malloc_conf =
    "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
#endif
