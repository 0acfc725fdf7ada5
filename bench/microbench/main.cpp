// inlet_microbench: the performance techniques we rely on, measured against their naive versions.
// Run: build/bin/inlet_microbench --benchmark_out=x.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
