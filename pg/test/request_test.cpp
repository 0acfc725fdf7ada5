// pg::async_request through the concepts of concepts.hpp, without a server: a test double
// that satisfies query_target records what reaches it (the builder's text, parameter
// OIDs and bytes) and answers with a result it builds with libpq's client-side result
// constructors (PQmakeEmptyPGresult, PQsetResultAttrs, PQsetvalue); a provider double
// hands out handles to it. No socket is opened.
#include "inlet/pg/request.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/describe/class.hpp>

#include "inlet/pg/builder.hpp"
#include "inlet/pg/pool.hpp"
#include "mail_attach.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using namespace pg::literals;

namespace {
using pg_test::attach;
struct message_row {  // matched by name: the double returns the columns in another order
  std::int64_t mid = 0;
  std::string st_id;
  std::vector<attach> attaches;
  friend bool operator==(const message_row&, const message_row&) = default;
};
BOOST_DESCRIBE_STRUCT(message_row, (), (mid, st_id, attaches))

constexpr pg::oid_t attach_oid = 71000, attach_array_oid = 71001;

struct column {
  std::string name;
  pg::oid_t type;
};
using cell = std::optional<std::string>;  // binary value, nullopt for NULL

/// A result built on the client side, as libpq hands one back (binary format).
pg::result make_result(const std::vector<column>& cols,
                       const std::vector<std::vector<cell>>& rows) {
  PGresult* r = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  std::vector<PGresAttDesc> desc(cols.size());
  for (std::size_t i = 0; i < cols.size(); ++i) {
    desc[i] = PGresAttDesc{};
    desc[i].name = const_cast<char*>(cols[i].name.c_str());
    desc[i].format = 1;
    desc[i].typid = cols[i].type;
    desc[i].typlen = -1;
    desc[i].atttypmod = -1;
  }
  EXPECT_TRUE(PQsetResultAttrs(r, static_cast<int>(desc.size()), desc.data()));
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t c = 0; c < rows[i].size(); ++c) {
      const cell& v = rows[i][c];
      EXPECT_TRUE(PQsetvalue(r, static_cast<int>(i), static_cast<int>(c),
                             v ? const_cast<char*>(v->data()) : nullptr,
                             v ? static_cast<int>(v->size()) : -1));
    }
  return pg::result(r);
}

template <class T>
std::string encode(const T& v, const pg::type_map* m) {
  pg::detail::type_scope scope(m);
  std::string out;
  std::error_code ec;
  EXPECT_TRUE(pg::encode_value(v, out, ec));
  EXPECT_FALSE(ec);
  return out;
}

/// The test double: a query target without a server.
class fake_connection {
 public:
  using executor_type = asio::any_io_executor;
  struct call {
    std::string text;
    std::vector<pg::oid_t> types;
    std::vector<cell> values;
  };

  fake_connection(executor_type ex, std::shared_ptr<const pg::type_map> m)
      : ex_(std::move(ex)), map_(std::move(m)) {}
  executor_type get_executor() const { return ex_; }
  const pg::type_map* types() const noexcept { return map_.get(); }

  /// Binds q as a connection would (with this target's OID map), records it, and
  /// completes (posted, never inline) with the next answer.
  template <class Q, class Token>
  auto async_query(Q q, Token&& token) {
    return asio::async_initiate<Token, void(std::error_code, pg::result)>(
        [this](auto h, Q q) {
          pg::detail::param_buffer pb;
          pb.user_types = map_.get();
          std::error_code ec;
          q.bind(pb, ec);
          pb.finish();
          call c{std::string(q.text()), pb.types, {}};
          for (std::size_t i = 0; i < pb.values.size(); ++i)
            c.values.push_back(
                pb.values[i]
                    ? cell(std::string(pb.values[i], static_cast<std::size_t>(pb.lengths[i])))
                    : cell());
          calls.push_back(std::move(c));
          if (watch) watched.push_back(*watch);
          pg::result r;
          if (!ec && !answers.empty()) {
            r = std::move(answers.front());
            answers.erase(answers.begin());
          }
          if (!ec && fail_with) ec = fail_with;
          auto ex = asio::get_associated_executor(h, ex_);
          asio::post(ex, [h = std::move(h), ec, r = std::move(r)]() mutable {
            std::move(h)(ec, std::move(r));
          });
        },
        token, std::move(q));
  }

  std::vector<call> calls;
  std::vector<pg::result> answers;
  std::error_code fail_with;
  const int* watch = nullptr;  // a counter read at each call (into watched)
  std::vector<int> watched;

 private:
  executor_type ex_;
  std::shared_ptr<const pg::type_map> map_;
};

/// A handle to a fake connection, counted (what a pool's loan looks like).
class fake_handle {
 public:
  fake_handle(fake_connection* c, int* out) : c_(c), out_(out) { ++*out_; }
  fake_handle(fake_handle&& o) noexcept : c_(std::exchange(o.c_, nullptr)), out_(o.out_) {}
  fake_handle& operator=(fake_handle&&) = delete;
  ~fake_handle() {
    if (c_) --*out_;
  }
  fake_connection& operator*() const noexcept { return *c_; }

 private:
  fake_connection* c_;
  int* out_;
};

/// The provider double: yields handles to one fake connection.
class fake_provider {
 public:
  using connection_type = fake_handle;
  explicit fake_provider(fake_connection& c) : c_(c) {}
  template <class Token>
  auto async_get_connection(Token&& token) {
    return asio::async_initiate<Token, void(std::error_code, fake_handle)>(
        [this](auto h) {
          auto ex = asio::get_associated_executor(h, c_.get_executor());
          std::error_code ec = refuse;
          asio::post(ex, [h = std::move(h), ec, this]() mutable {
            std::move(h)(ec, fake_handle(&c_, &loaned));
          });
        },
        token);
  }
  int loaned = 0;  // handles alive
  std::error_code refuse;

 private:
  fake_connection& c_;
};

struct not_a_target {};

static_assert(pg::query_target<fake_connection>);
static_assert(pg::query_target<fake_handle>);
static_assert(pg::connection_provider<fake_provider>);
static_assert(pg::query_target<pg::connection>);
static_assert(pg::query_target<pg::pooled_connection>);
static_assert(pg::query_target<std::unique_ptr<pg::connection>>);
static_assert(pg::connection_provider<pg::pool>);
static_assert(!pg::query_target<not_a_target>);
static_assert(!pg::query_target<int*>);
static_assert(!pg::connection_provider<fake_connection>);

class PgRequest : public ::testing::Test {
 protected:
  PgRequest() : map_(pg::register_types<attach>()) {
    pg::set_type_oid<attach>(*map_, attach_oid, attach_array_oid);
  }
  template <class F>
  void run(F f) {
    bool done = false;
    asio::co_spawn(
        io_,
        [&]() -> asio::awaitable<void> {
          co_await f();
          done = true;
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
    io_.run();
    io_.restart();
    EXPECT_TRUE(done);
  }
  // The rows the double answers with: columns in another order than message_row's fields.
  pg::result answer(const std::vector<message_row>& rows) {
    std::vector<std::vector<cell>> cells;
    for (const auto& m : rows)
      cells.push_back(
          {encode(m.attaches, map_.get()), encode(m.mid, map_.get()), encode(m.st_id, map_.get())});
    return make_result(
        {{"attaches", attach_array_oid}, {"mid", pg::oid::int8}, {"st_id", pg::oid::text}}, cells);
  }

  asio::io_context io_;
  std::shared_ptr<pg::oid_map<attach>> map_;
};

const std::vector<message_row> sample_rows = {
    {1, "st1", {{"a.txt", "text/plain", 10}, {"b.png", "image/png", 2000}}},
    {2, "st2", {}},
    {3, "st3", {{"c.pdf", "application/pdf", 123456789012}}},
};

TEST_F(PgRequest, TypedRequestThroughTheDouble) {
  fake_connection conn(io_.get_executor(), map_);
  conn.answers.push_back(answer(sample_rows));
  const std::int64_t uid = 42;
  const std::vector<std::int64_t> mids{1, 2, 3};
  const attach like{"%.txt", "text/plain", 0};
  const auto q = "SELECT mid, st_id, attaches FROM mail.messages WHERE uid = "_SQL + uid +
                 " AND mid = ANY("_SQL + mids + ") AND $$x$$ <> "_SQL + like;
  std::vector<message_row> rows;
  std::size_t n = 0;
  run([&]() -> asio::awaitable<void> { n = co_await pg::async_request(conn, q, pg::into(rows)); });

  ASSERT_EQ(conn.calls.size(), 1u);
  const auto& c = conn.calls[0];
  EXPECT_EQ(c.text,
            "SELECT mid, st_id, attaches FROM mail.messages WHERE uid = $1 AND mid = ANY($2) AND "
            "$$x$$ <> $3");
  // The composite parameter's OID comes from the double's own OID map.
  EXPECT_EQ(c.types, (std::vector<pg::oid_t>{pg::oid::int8, pg::oid::int8_array, attach_oid}));
  ASSERT_EQ(c.values.size(), 3u);
  std::int64_t uid_back = 0;
  std::vector<std::int64_t> mids_back;
  attach like_back;
  {
    pg::detail::type_scope scope(map_.get());
    EXPECT_FALSE(
        pg::decode_value(c.values[0]->data(), static_cast<int>(c.values[0]->size()), uid_back));
    EXPECT_FALSE(
        pg::decode_value(c.values[1]->data(), static_cast<int>(c.values[1]->size()), mids_back));
    EXPECT_FALSE(
        pg::decode_value(c.values[2]->data(), static_cast<int>(c.values[2]->size()), like_back));
  }
  EXPECT_EQ(uid_back, uid);
  EXPECT_EQ(mids_back, mids);
  EXPECT_EQ(like_back, like);
  // The double's rows decode by name with its map, columns in another order.
  EXPECT_EQ(n, sample_rows.size());
  EXPECT_EQ(rows, sample_rows);
}

TEST_F(PgRequest, RawRequestAndAHandle) {
  fake_connection conn(io_.get_executor(), map_);
  conn.answers.push_back(answer(sample_rows));
  int loaned = 0;
  fake_handle h(&conn, &loaned);
  pg::result r;
  run([&]() -> asio::awaitable<void> {
    r = co_await pg::async_request(h, pg::sql("SELECT $1::int4", 7));
  });
  ASSERT_EQ(conn.calls.size(), 1u);
  EXPECT_EQ(conn.calls[0].text, "SELECT $1::int4");
  EXPECT_EQ(conn.calls[0].types, std::vector<pg::oid_t>{pg::oid::int4});
  EXPECT_EQ(r.rows(), 3);
  EXPECT_EQ(r.column_name(0), "attaches");
}

TEST_F(PgRequest, ProviderLoansAConnectionForTheRequestOnly) {
  fake_connection conn(io_.get_executor(), map_);
  conn.answers.push_back(answer(sample_rows));
  fake_provider p(conn);
  std::vector<message_row> rows;
  int loaned_during = -1;
  conn.watch = &p.loaned;
  run([&]() -> asio::awaitable<void> {
    co_await pg::async_request(p, pg::sql("SELECT 1"), pg::into(rows));
    co_await asio::post(io_, asio::use_awaitable);
    loaned_during = p.loaned;
  });
  EXPECT_EQ(rows, sample_rows);
  EXPECT_EQ(conn.watched, std::vector<int>{1});  // the query ran on a loaned handle
  EXPECT_EQ(loaned_during, 0);                   // released when the request completed
  EXPECT_EQ(p.loaned, 0);
  ASSERT_EQ(conn.calls.size(), 1u);
}

TEST_F(PgRequest, ErrorsReachTheCaller) {
  fake_connection conn(io_.get_executor(), map_);
  conn.fail_with = pg::make_error_code(pg::errc::connection_error);
  std::vector<message_row> rows;
  std::error_code got;
  // A callback token: the handler runs on the target's executor.
  pg::async_request(conn, pg::sql("SELECT 1"), pg::into(rows),
                    [&](std::error_code ec, std::size_t n) {
                      got = ec;
                      EXPECT_EQ(n, 0u);
                    });
  io_.run();
  io_.restart();
  EXPECT_EQ(got, pg::errc::connection_error);

  fake_provider p(conn);
  p.refuse = pg::make_error_code(pg::errc::pool_timeout);
  got = {};
  pg::async_request(p, pg::sql("SELECT 1"), [&](std::error_code ec, pg::result) { got = ec; });
  io_.run();
  EXPECT_EQ(got, pg::errc::pool_timeout);
  EXPECT_EQ(p.loaned, 0);
  EXPECT_EQ(conn.calls.size(), 1u);  // the refused loan ran no query
}

TEST_F(PgRequest, RowsOfTheWrongTypeAreATypeMismatch) {
  fake_connection conn(io_.get_executor(), map_);
  conn.answers.push_back(make_result(
      {{"mid", pg::oid::text}, {"st_id", pg::oid::text}, {"attaches", attach_array_oid}},
      {{encode(std::string("1"), nullptr), encode(std::string("x"), nullptr),
        encode(std::vector<attach>{}, map_.get())}}));
  std::vector<message_row> rows;
  std::error_code got;
  pg::async_request(conn, pg::sql("SELECT 1"), pg::into(rows),
                    [&](std::error_code ec, std::size_t) { got = ec; });
  io_.run();
  EXPECT_EQ(got, pg::errc::type_mismatch);
  EXPECT_TRUE(rows.empty());
}

TEST_F(PgRequest, WithoutTheMapAUserTypeColumnDoesNotDecode) {
  fake_connection conn(io_.get_executor(), nullptr);  // a target without types()
  conn.answers.push_back(answer(sample_rows));
  std::vector<message_row> rows;
  std::error_code got;
  pg::async_request(conn, pg::sql("SELECT 1"), pg::into(rows),
                    [&](std::error_code ec, std::size_t) { got = ec; });
  io_.run();
  EXPECT_EQ(got, pg::errc::type_mismatch);
}
}  // namespace
