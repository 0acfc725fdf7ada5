// expect: declares a connection_type but is not a connection provider
#include "common.hpp"
#include "inlet/pg/request.hpp"

struct my_pool {  // names its connection type, but cannot hand one out
  using connection_type = pg::pooled_connection;
};

asio::awaitable<void> body(my_pool& p) {
  co_await pg::async_request(p, pg::sql("SELECT 1"));
}
