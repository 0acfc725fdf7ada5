# Helpers shared by every component. Keep component CMakeLists short:
#   inlet_add_library(NAME SOURCES ... [DEPS ...])         -> inlet::NAME
#   inlet_add_test(NAME SOURCES ... [LIBS ...] [LABELS ...]) -> ctest unit test
#   inlet_add_pgtest(NAME SOURCES ... [LIBS ...])           -> ctest test run against a
#        throwaway PostgreSQL cluster (scripts/with-postgres.sh exports INLET_PG_DSN)
#   inlet_add_fuzzer(NAME SOURCES ... [LIBS ...] [CORPUS dir])
#        -> libFuzzer binary when INLET_FUZZ=ON (clang); always a ctest test that replays
#           the corpus (and crash inputs) through the same entry point with any compiler
#   inlet_add_benchmark(NAME SOURCES ... [LIBS ...] [SMOKE_ARGS ...])
#        -> program in build/bin; a ctest "bench-smoke" run with tiny iteration counts

set(INLET_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)

# Aggregates, so sanitizer/fuzz builds compile only what they run:
#   cmake --build B --target inlet_tsan_tests   (tests labelled tsan)
#   cmake --build B --target inlet_fuzzers      (libFuzzer binaries, INLET_FUZZ=ON)
add_custom_target(inlet_tsan_tests)
add_custom_target(inlet_fuzzers)

function(inlet_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra
    $<$<BOOL:${INLET_WERROR}>:-Werror>)
endfunction()

function(inlet_add_library name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(inlet_${name} STATIC ${A_SOURCES})
  add_library(inlet::${name} ALIAS inlet_${name})
  target_include_directories(inlet_${name}
    PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(inlet_${name} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
  inlet_warnings(inlet_${name})
endfunction()

# One test executable linked with GoogleTest, registered with ctest. KIND is "unit" or
# "pg" (run under scripts/with-postgres.sh); tests labelled tsan join inlet_tsan_tests.
function(_inlet_test kind default_timeout name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_LIBS} GTest::gtest GTest::gmock GTest::gtest_main Threads::Threads)
  inlet_warnings(${name})
  if(kind STREQUAL "pg")
    add_test(NAME ${name} COMMAND ${INLET_ROOT}/scripts/with-postgres.sh $<TARGET_FILE:${name}>)
  else()
    add_test(NAME ${name} COMMAND ${name})
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT ${default_timeout})
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "${kind};${A_LABELS}")
  if("tsan" IN_LIST A_LABELS)
    add_dependencies(inlet_tsan_tests ${name})
  endif()
endfunction()

function(inlet_add_test name)
  _inlet_test(unit 300 ${name} ${ARGN})
endfunction()

function(inlet_add_pgtest name)
  _inlet_test(pg 600 ${name} ${ARGN})
endfunction()

function(inlet_add_fuzzer name)
  cmake_parse_arguments(A "" "CORPUS" "SOURCES;LIBS" ${ARGN})
  if(NOT A_CORPUS)
    set(A_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${name})
  endif()
  # Replay driver: runs every corpus file through LLVMFuzzerTestOneInput, any compiler.
  add_executable(${name}_replay ${A_SOURCES} ${INLET_ROOT}/cmake/fuzz_replay_main.cpp)
  target_link_libraries(${name}_replay PRIVATE ${A_LIBS})
  inlet_warnings(${name}_replay)
  add_test(NAME ${name}_replay COMMAND ${name}_replay ${A_CORPUS})
  set_tests_properties(${name}_replay PROPERTIES TIMEOUT 300 LABELS "fuzz-replay")
  if(INLET_FUZZ)
    add_executable(${name} ${A_SOURCES})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${name} PRIVATE ${A_LIBS})
    inlet_warnings(${name})
    add_dependencies(inlet_fuzzers ${name})
  endif()
endfunction()

function(inlet_add_benchmark name)
  cmake_parse_arguments(A "" "" "SOURCES;LIBS;SMOKE_ARGS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_LIBS} Threads::Threads)
  inlet_warnings(${name})
  add_test(NAME ${name}_smoke COMMAND ${name} ${A_SMOKE_ARGS})
  set_tests_properties(${name}_smoke PROPERTIES TIMEOUT 300 LABELS "bench-smoke")
endfunction()
