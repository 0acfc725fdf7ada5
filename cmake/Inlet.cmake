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

# Links the allocator INLET_ALLOCATOR names into an executable (system: nothing).
# Libraries never link one: the release-memory code finds the process's allocator
# at run time.
function(inlet_link_allocator target)
  if(INLET_SANITIZE OR INLET_ALLOCATOR STREQUAL "system")
    return()
  endif()
  if(INLET_ALLOCATOR STREQUAL "jemalloc")
    pkg_check_modules(INLET_JEMALLOC REQUIRED IMPORTED_TARGET GLOBAL jemalloc)
    target_link_libraries(${target} PRIVATE PkgConfig::INLET_JEMALLOC)
    target_compile_definitions(${target} PRIVATE INLET_ALLOCATOR_JEMALLOC)
  elseif(INLET_ALLOCATOR STREQUAL "tcmalloc")
    pkg_check_modules(INLET_TCMALLOC REQUIRED IMPORTED_TARGET GLOBAL libtcmalloc_minimal)
    target_link_libraries(${target} PRIVATE PkgConfig::INLET_TCMALLOC)
  else()
    message(FATAL_ERROR "INLET_ALLOCATOR: jemalloc, tcmalloc or system, not '${INLET_ALLOCATOR}'")
  endif()
endfunction()

function(inlet_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra
    $<$<BOOL:${INLET_WERROR}>:-Werror>)
endfunction()

# What each external dependency of an installed library is called in inletConfig.cmake
# (which finds it again for the consumer). A new dependency must be named here, or the
# configure step stops: a library whose installed package cannot find its dependencies
# would only fail later, in a user's build.
set(INLET_EXTERNAL_boost "Boost::headers")
set(INLET_EXTERNAL_boost_context "Boost::context")
set(INLET_EXTERNAL_boost_json "Boost::json")
set(INLET_EXTERNAL_threads "Threads::Threads")
set(INLET_EXTERNAL_openssl "OpenSSL::SSL;OpenSSL::Crypto")
set(INLET_EXTERNAL_libpq "PkgConfig::LIBPQ")
set(INLET_EXTERNAL_libhs "PkgConfig::HS")
set(INLET_EXTERNAL_liburing "PkgConfig::LIBURING")
set(INLET_EXTERNAL_date "date::date-tz")
set(INLET_EXTERNAL_curl "CURL::libcurl")
set(INLET_EXTERNAL_graphicsmagick "PkgConfig::GRAPHICSMAGICK")
set(INLET_EXTERNAL_yaml_cpp "yaml-cpp")
set(INLET_EXTERNAL_zlib "ZLIB::ZLIB")
set(INLET_EXTERNAL_sqlite3 "PkgConfig::SQLITE3")
set(INLET_EXTERNAL_zstd "PkgConfig::ZSTD")
set(INLET_EXTERNAL_NAMES boost boost_context boost_json threads openssl libpq libhs liburing date
    curl graphicsmagick yaml_cpp zlib sqlite3 zstd)

include(GNUInstallDirs)

# Records an installed library's inlet and external dependencies for inletConfig.cmake.
function(_inlet_record_install name)
  set(inlet_deps)
  set(external)
  foreach(d ${ARGN})
    if(d MATCHES "^inlet::(.+)$")
      list(APPEND inlet_deps ${CMAKE_MATCH_1})
      continue()
    endif()
    if(IS_ABSOLUTE "${d}")  # a system library by path (libcrypt): linked as it is
      continue()
    endif()
    if(TARGET ${d} AND d MATCHES "^inlet_")
      # A helper library of this component only (embedded files): installed beside it,
      # in its export set.
      install(TARGETS ${d} EXPORT inlet-${name}-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
      continue()
    endif()
    set(found "")
    foreach(e ${INLET_EXTERNAL_NAMES})
      if(d IN_LIST INLET_EXTERNAL_${e})
        set(found ${e})
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "inlet_add_library(${name}): dependency ${d} has no entry in "
                          "INLET_EXTERNAL_* (cmake/Inlet.cmake), so the installed package "
                          "could not find it")
    endif()
    list(APPEND external ${found})
  endforeach()
  list(REMOVE_DUPLICATES inlet_deps)
  list(REMOVE_DUPLICATES external)
  set_property(GLOBAL APPEND PROPERTY INLET_INSTALLED_COMPONENTS ${name})
  set_property(GLOBAL PROPERTY INLET_COMPONENT_${name}_DEPS "${inlet_deps}")
  set_property(GLOBAL PROPERTY INLET_COMPONENT_${name}_EXTERNAL "${external}")
endfunction()

# The soname of a shared library file (readelf), for a library opened with dlopen at its
# first use instead of linked (src/thumbnail.cpp, outbound/src/curl_lazy.cpp say why).
function(inlet_soname out file)
  execute_process(COMMAND readelf -d ${file} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT dynamic MATCHES "Library soname: \\[([^]]+)\\]")
    message(FATAL_ERROR "no soname in ${file}")
  endif()
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

# NO_INSTALL: a build-only variant (the io_uring clones), not part of the package.
function(inlet_add_library name)
  cmake_parse_arguments(A "NO_INSTALL" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(inlet_${name} STATIC ${A_SOURCES})
  add_library(inlet::${name} ALIAS inlet_${name})
  target_include_directories(inlet_${name}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(inlet_${name} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
  inlet_warnings(inlet_${name})
  if(A_NO_INSTALL)
    return()
  endif()
  # Installed as inlet::NAME, one export set per library, so a consumer that asks for
  # one component loads only it and what it needs (inletConfig.cmake).
  set_target_properties(inlet_${name} PROPERTIES EXPORT_NAME ${name})
  install(TARGETS inlet_${name} EXPORT inlet-${name}-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  install(EXPORT inlet-${name}-targets NAMESPACE inlet::
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/inlet COMPONENT dev)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/include)
    install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
  endif()
  _inlet_record_install(${name} ${A_DEPS} ${A_PRIVATE_DEPS})
endfunction()

# Writes inletConfig.cmake and its version file from what inlet_add_library recorded;
# called once, after every component was added.
function(inlet_install_package)
  get_property(components GLOBAL PROPERTY INLET_INSTALLED_COMPONENTS)
  set(INLET_CONFIG_TABLE "")
  foreach(c ${components})
    get_property(deps GLOBAL PROPERTY INLET_COMPONENT_${c}_DEPS)
    get_property(ext GLOBAL PROPERTY INLET_COMPONENT_${c}_EXTERNAL)
    string(APPEND INLET_CONFIG_TABLE "set(_inlet_deps_${c} \"${deps}\")\n")
    string(APPEND INLET_CONFIG_TABLE "set(_inlet_external_${c} \"${ext}\")\n")
  endforeach()
  set(INLET_CONFIG_COMPONENTS "${components}")
  set(dir ${CMAKE_BINARY_DIR}/cmake-package)
  configure_file(${INLET_ROOT}/cmake/inletConfig.cmake.in ${dir}/inletConfig.cmake @ONLY)
  include(CMakePackageConfigHelpers)
  write_basic_package_version_file(${dir}/inletConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${dir}/inletConfig.cmake ${dir}/inletConfigVersion.cmake
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/inlet COMPONENT dev)
endfunction()

# One test executable linked with GoogleTest, registered with ctest. KIND is "unit" or
# "pg" (run under scripts/with-postgres.sh); tests labelled tsan join inlet_tsan_tests.
# Every test is also labelled with its component's folder (`ctest -L smtp`).
function(_inlet_test kind default_timeout name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_LIBS} GTest::gtest GTest::gmock GTest::gtest_main Threads::Threads)
  inlet_warnings(${name})
  # A test TU is built for compile time: at -Og it compiles in about 2/3 of -O2's time
  # (one pg test 17.2 -> 11.6 s); the libraries under test keep the build's own level.
  target_compile_options(${name} PRIVATE $<$<CONFIG:Release>:-Og>)
  if(kind STREQUAL "pg")
    add_test(NAME ${name} COMMAND ${INLET_ROOT}/scripts/with-postgres.sh $<TARGET_FILE:${name}>)
  else()
    add_test(NAME ${name} COMMAND ${name})
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT ${default_timeout})
  endif()
  get_filename_component(component ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set_tests_properties(${name} PROPERTIES TIMEOUT ${A_TIMEOUT}
    LABELS "${kind};${component};${A_LABELS}")
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

# FUZZ_LIBS: what the libFuzzer binary links instead of LIBS, when a library's fuzzed
# part is a few of its sources (see inlet_add_fuzz_core); the replay always links LIBS.
function(inlet_add_fuzzer name)
  cmake_parse_arguments(A "" "CORPUS" "SOURCES;LIBS;FUZZ_LIBS" ${ARGN})
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
    if(A_FUZZ_LIBS)
      target_link_libraries(${name} PRIVATE ${A_FUZZ_LIBS})
    else()
      target_link_libraries(${name} PRIVATE ${A_LIBS})
    endif()
    inlet_warnings(${name})
    add_dependencies(inlet_fuzzers ${name})
  endif()
endfunction()

# The fuzz build (INLET_FUZZ) compiles every TU with ASan, UBSan and coverage, which
# is slow for the Asio and Beast drivers no fuzz target runs. A fuzz core is a library's
# fuzzed sources alone, built only for the fuzzers: inlet_fuzz_NAME.
function(inlet_add_fuzz_core name)
  if(NOT INLET_FUZZ)
    return()
  endif()
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(inlet_fuzz_${name} STATIC EXCLUDE_FROM_ALL ${A_SOURCES})
  target_include_directories(inlet_fuzz_${name}
    PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(inlet_fuzz_${name} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
  inlet_warnings(inlet_fuzz_${name})
endfunction()

function(inlet_add_benchmark name)
  cmake_parse_arguments(A "" "" "SOURCES;LIBS;SMOKE_ARGS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_LIBS} Threads::Threads)
  inlet_warnings(${name})
  add_test(NAME ${name}_smoke COMMAND ${name} ${A_SMOKE_ARGS})
  set_tests_properties(${name}_smoke PROPERTIES TIMEOUT 300 LABELS "bench-smoke")
endfunction()
