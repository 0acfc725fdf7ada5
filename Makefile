# The two commands: `make run` and `make test`. Everything else is a convenience.
BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
SMTP       ?= 127.0.0.1:1025
HTTP       ?= 127.0.0.1:8025

.PHONY: run-pg
.PHONY: all deps configure build run test test-uring test-asan test-tsan fuzz clean format

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	@echo ""
	@echo "inletd: SMTP on $(SMTP), HTTP on http://$(HTTP)/ (memory store)"
	@echo "  send:  swaks --server $(SMTP) --to someone@example.com"
	@echo "  list:  curl http://$(HTTP)/api/v1/messages"
	@echo "  look:  open http://$(HTTP)/ in a browser"
	@echo ""
	exec $(BUILD)/bin/inletd --smtp $(SMTP) --listen $(HTTP) --store memory

# Durable mode: inletd with the PostgreSQL store on a local cluster kept in $(BUILD)/pgdata.
run-pg: build
	bash store/run-pg.sh $(BUILD) $(SMTP) $(HTTP)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

# Only the io_uring build's suites (label uring; they are part of `make test` too).
test-uring: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300 -L uring

# ASan + UBSan build of the suite. Left out: the io_uring clone of the Asio libraries
# (INLET_ASAN_URING=ON keeps it; the kernel writes into io_uring's buffers where ASan
# cannot see, and compiling the clone is a third of this build), tests that run no
# code of ours under the sanitizer (compile-fail, packaging), the benchmark smokes, and
# the browser test (its minute is chromium's; the server paths it drives are the API
# end-to-end suites', which run here).
INLET_ASAN_URING ?= OFF
# -Og: ASan+UBSan at -O1 spends most of its compile time optimizing the checks; -Og
# compiles the same suite in about 2/3 of the time and still inlines enough to run it.
test-asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og" -DINLET_SANITIZE=address,undefined \
	  -DINLET_IO_URING=$(INLET_ASAN_URING) $(CMAKE_ARGS)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 900 -LE 'bench-smoke|compile-fail|install|browser'

# TSan build, for the pool and the multi-threaded parts (label "tsan").
test-tsan: deps
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" -DINLET_SANITIZE=thread -DINLET_BENCH=OFF $(CMAKE_ARGS)
	cmake --build build-tsan -j $(JOBS) --target inlet_tsan_tests
	cd build-tsan && ctest --output-on-failure -j $(JOBS) --timeout 900 -L tsan

# libFuzzer targets (clang-19), each run briefly over its corpus.
fuzz: deps
	CC=clang-19 CXX=clang++-19 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DINLET_FUZZ=ON -DINLET_BENCH=OFF \
	  -DINLET_SANITIZE=address,undefined $(CMAKE_ARGS)
	cmake --build build-fuzz -j $(JOBS) --target inlet_fuzzers
	bash scripts/run-fuzzers.sh build-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz

format:
	find . -path ./build\* -prune -o \( -name '*.cpp' -o -name '*.hpp' \) -print | xargs clang-format-19 -i
