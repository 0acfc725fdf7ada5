# io_uring variants of Asio-using libraries (INLET_IO_URING).
#
# Asio picks its socket reactor at compile time. BOOST_ASIO_HAS_IO_URING plus
# BOOST_ASIO_DISABLE_EPOLL make io_uring the backend for sockets and timers.
# These macros change Asio's types (the scheduler and reactor inside
# io_context), so every translation unit of one program that includes an Asio
# header must see the same setting: mixing an epoll-built library and an
# io_uring-built one in one binary is an ODR violation. Hence each Asio-using
# library is compiled twice, `X` and `X_uring`, and the io_uring binaries link
# only `_uring` ones.
#
#   inlet::uring_asio         interface target: the two definitions + liburing
#   inlet_uring_clone(LIB [MAP from=to ...])
#       -> LIB_uring: a static library from LIB's sources, include directories,
#          options and link libraries, plus inlet::uring_asio; link libraries
#          named in MAP are replaced (e.g. inlet::smtp=inlet::smtp_uring)
include_guard(GLOBAL)

if(NOT TARGET inlet_uring_asio)
  pkg_check_modules(LIBURING REQUIRED IMPORTED_TARGET liburing)
  add_library(inlet_uring_asio INTERFACE)
  add_library(inlet::uring_asio ALIAS inlet_uring_asio)
  target_compile_definitions(inlet_uring_asio INTERFACE BOOST_ASIO_HAS_IO_URING BOOST_ASIO_DISABLE_EPOLL)
  target_link_libraries(inlet_uring_asio INTERFACE PkgConfig::LIBURING)
  # Asio < 1.27 leaves user_data of some io_uring entries stale; see the header.
  target_compile_options(inlet_uring_asio INTERFACE
    "SHELL:-include ${CMAKE_CURRENT_LIST_DIR}/asio_uring_sqe.h")
endif()

function(inlet_uring_clone lib)
  cmake_parse_arguments(A "" "" "MAP" ${ARGN})
  get_target_property(srcs ${lib} SOURCES)
  get_target_property(dir ${lib} SOURCE_DIR)
  set(abs)
  foreach(s ${srcs})
    if(IS_ABSOLUTE ${s})
      list(APPEND abs ${s})
    else()
      list(APPEND abs ${dir}/${s})
    endif()
  endforeach()
  add_library(${lib}_uring STATIC ${abs})
  foreach(prop INCLUDE_DIRECTORIES INTERFACE_INCLUDE_DIRECTORIES COMPILE_OPTIONS
               COMPILE_DEFINITIONS INTERFACE_COMPILE_DEFINITIONS)
    get_target_property(v ${lib} ${prop})
    if(v)
      set_property(TARGET ${lib}_uring PROPERTY ${prop} ${v})
    endif()
  endforeach()
  foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    get_target_property(v ${lib} ${prop})
    if(v)
      foreach(m ${A_MAP})
        string(REPLACE "=" ";" pair ${m})
        list(GET pair 0 from)
        list(GET pair 1 to)
        list(TRANSFORM v REPLACE "^${from}$" "${to}")
      endforeach()
      set_property(TARGET ${lib}_uring PROPERTY ${prop} ${v})
    endif()
  endforeach()
  target_link_libraries(${lib}_uring PUBLIC inlet::uring_asio)
endfunction()
