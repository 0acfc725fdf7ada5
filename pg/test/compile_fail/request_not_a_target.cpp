// expect: pg::async_request: this type is not a query target
#include "common.hpp"
#include "inlet/pg/request.hpp"

struct logger {  // wraps nothing: no async_query
  asio::any_io_executor get_executor() const { return {}; }
};

asio::awaitable<void> body(logger& l) {
  co_await pg::async_request(l, pg::sql("SELECT 1"));
}
