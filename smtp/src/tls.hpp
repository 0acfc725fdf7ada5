// The SMTP connection core's TLS is inlet::tls (tls/include/inlet/tls/engine.hpp),
// shared with POP3; these names keep the core's spelling.
#pragma once

#include <inlet/tls/engine.hpp>

namespace inlet::smtp::detail {
using tls_context = inlet::tls::tls_context;
using tls_engine = inlet::tls::tls_engine;
}  // namespace inlet::smtp::detail
