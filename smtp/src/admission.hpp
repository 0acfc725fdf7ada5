// The SMTP server's use of the shared connection admission (inlet/net/admission.hpp):
// its names in this namespace, and the limits from the server's configuration.
#pragma once

#include <inlet/net/admission.hpp>

namespace inlet::smtp {
struct server_config;
}

namespace inlet::smtp::detail {

using net::admission;
using net::admission_limits;
using net::admit_result;
using net::admitted;
using net::slot;
using net::subnet_of;

/// The admission limits a server_config asks for.
admission_limits limits_of(const server_config& cfg);

}  // namespace inlet::smtp::detail
