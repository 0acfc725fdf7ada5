// Shared by the compile-fail snippets: each includes this, defines body(), and must not
// compile for the reason its "expect:" line names (run.sh checks the diagnostic).
#pragma once
#include <boost/asio/awaitable.hpp>

#include "inlet/pg/transaction.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
