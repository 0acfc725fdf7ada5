// Forced-included (-include) into every translation unit of the io_uring
// builds (cmake/InletUring.cmake), before any Asio header.
//
// Why: Asio before 1.27 (Boost 1.81 ships 1.24) takes submission-queue entries
// with io_uring_get_sqe() and, for its cancellation and some internal entries,
// never sets user_data. liburing 2.3 (Debian 12) does not clear user_data
// either, so such an entry carries whatever the previous occupant of its ring
// slot carried: usually the io_queue pointer of some other socket's operation.
// Its completion is then delivered to that queue as if it were that queue's
// result (chriskohlhoff/asio PR 1215): an operation of an unrelated socket
// may complete early, or with a wrong result. We found it while chasing a
// shutdown hang of the io_uring build, which turned out to be our own (see
// docs/smtp.md); we have not seen this one misbehave in inletd, but nothing in
// our use of Asio avoids the entries concerned (stop() ends an idle
// connection's wait by cancelling it).
//
// The fix here is the one upstream made in Asio 1.27: every entry Asio takes
// starts with user_data 0, which Asio's completion loop ignores.
#pragma once

#include <boost/asio/version.hpp>
#include <liburing.h>

#if BOOST_ASIO_VERSION < 102700
static inline struct io_uring_sqe* inlet_asio_get_sqe(struct io_uring* ring) {
  struct io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe) io_uring_sqe_set_data(sqe, 0);
  return sqe;
}
#define io_uring_get_sqe inlet_asio_get_sqe
#endif
