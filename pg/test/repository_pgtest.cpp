// The query repository: named queries from a file, :params bound to a described
// parameters_type, validated against the server with every mismatch reported at once.
#include <boost/asio/co_spawn.hpp>
#include <boost/describe/class.hpp>
#include <cstdio>
#include <fstream>

#include "inlet/pg/repository.hpp"
#include "inlet/pg/type_lookup.hpp"
#include "mail_attach.hpp"
#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;

namespace {
using pg_test::attach;
struct GetMessages {
  static constexpr std::string_view name = "GetMessages";
  struct parameters_type {
    std::int64_t uid;
    std::vector<std::int64_t> mids;
  };
  using row_type = std::tuple<std::int64_t, std::string, std::vector<attach>>;
};
BOOST_DESCRIBE_STRUCT(GetMessages::parameters_type, (), (uid, mids))
struct CountFor {
  static constexpr std::string_view name = "CountFor";
  struct parameters_type {
    std::int64_t uid;
  };
  using row_type = std::int64_t;
};
BOOST_DESCRIBE_STRUCT(CountFor::parameters_type, (), (uid))
struct WrongTypes {  // the file compares st_id (text) with :who, an int8 here
  static constexpr std::string_view name = "WrongTypes";
  struct parameters_type {
    std::int64_t who;
  };
  using row_type = std::int64_t;
};
BOOST_DESCRIBE_STRUCT(WrongTypes::parameters_type, (), (who))
struct WrongRow {  // the file returns text, the row type wants int8
  static constexpr std::string_view name = "WrongRow";
  struct parameters_type {
    std::string who;
  };
  using row_type = std::int64_t;
};
BOOST_DESCRIBE_STRUCT(WrongRow::parameters_type, (), (who))
struct Broken {
  static constexpr std::string_view name = "Broken";
  struct parameters_type {
    std::int64_t uid;
  };
};
BOOST_DESCRIBE_STRUCT(Broken::parameters_type, (), (uid))

struct message_by_name {  // described: matched to columns by name
  std::string st_id;
  std::int64_t mid = 0;
};
BOOST_DESCRIBE_STRUCT(message_by_name, (), (st_id, mid))
struct ByNameGood {  // the file returns the columns in another order: fine by name
  static constexpr std::string_view name = "ByNameGood";
  struct parameters_type {
    std::int64_t uid;
  };
  using row_type = message_by_name;
};
BOOST_DESCRIBE_STRUCT(ByNameGood::parameters_type, (), (uid))
struct bad_row {
  std::int64_t mid = 0;
  std::string st_id;
  std::int64_t attaches = 0;  // the column is mail.attach[]
};
BOOST_DESCRIBE_STRUCT(bad_row, (), (mid, st_id, attaches))
struct ByNameBad {  // st_id renamed sid, an extra uid, attaches of the wrong type
  static constexpr std::string_view name = "ByNameBad";
  struct parameters_type {
    std::int64_t uid;
  };
  using row_type = bad_row;
};
BOOST_DESCRIBE_STRUCT(ByNameBad::parameters_type, (), (uid))
struct WrongCount {  // two columns for a one-column row type
  static constexpr std::string_view name = "WrongCount";
  struct parameters_type {
    std::int64_t uid;
  };
  using row_type = std::int64_t;
};
BOOST_DESCRIBE_STRUCT(WrongCount::parameters_type, (), (uid))

constexpr std::string_view file_text = R"(-- Queries of the mail store.
-- name: GetMessages
-- attributes: read-only
SELECT mid, st_id, attaches
  FROM mail.messages
 WHERE uid = :uid
   AND mid = ANY(:mids::code.mids)
 ORDER BY mid;

-- name: CountFor
SELECT count(*) FROM mail.messages WHERE uid = :uid AND st_id <> ':not_a_param'

-- name: WrongTypes
SELECT st_id FROM mail.messages WHERE st_id = :who

-- name: Broken
SELEC mid FROM mail.messages WHERE uid = :uid

-- name: WrongRow
SELECT st_id FROM mail.messages WHERE st_id = :who

-- name: ByNameGood
SELECT mid, st_id FROM mail.messages WHERE uid = :uid

-- name: ByNameBad
SELECT mid, st_id AS sid, attaches, uid FROM mail.messages WHERE uid = :uid

-- name: WrongCount
SELECT mid, uid FROM mail.messages WHERE uid = :uid
)";

std::string write_temp(std::string_view text) {
  char path[] = "/tmp/inlet_repo_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << text;
  return path;
}

class PgRepository : public ::testing::Test {
 protected:
  void SetUp() override {
    if (pg_dsn().empty()) GTEST_SKIP() << "INLET_PG_DSN not set";
    {
      pg::connection s(io_.get_executor());
      s.connect(pg_dsn());
      for (const char* q :
           {"SET client_min_messages = warning", "DROP SCHEMA IF EXISTS mail CASCADE",
            "DROP SCHEMA IF EXISTS code CASCADE", "CREATE SCHEMA mail", "CREATE SCHEMA code",
            "CREATE DOMAIN code.mids AS bigint[]",
            "CREATE TYPE mail.attach AS (filename text, type text, size bigint)",
            "CREATE TABLE mail.messages (uid bigint, mid bigint, st_id text, attaches "
            "mail.attach[])",
            "INSERT INTO mail.messages VALUES (42, 1, 's1', ARRAY[ROW('a','t',1)::mail.attach]),"
            " (42, 2, 's2', '{}'), (42, 3, 's3', NULL), (7, 4, 's4', '{}')"})
        s.execute(q);
    }
    pg::connection_options o;
    o.types = types_;
    c_.emplace(io_.get_executor(), o);
    c_->connect(pg_dsn());
    pg::lookup_types(*c_, *types_);
    path_ = write_temp(file_text);
  }
  void TearDown() override {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  asio::io_context io_;
  std::shared_ptr<pg::oid_map<attach>> types_ = pg::register_types<attach>();
  std::optional<pg::connection> c_;
  std::string path_;
};
}  // namespace

TEST_F(PgRepository, LoadBindRun) {
  const auto repo = pg::query_repository<GetMessages, CountFor>::load_file(path_);
  EXPECT_EQ(repo.text<GetMessages>(),
            "SELECT mid, st_id, attaches\n  FROM mail.messages\n WHERE uid = $1\n   AND mid = "
            "ANY($2::code.mids)\n "
            "ORDER BY mid");
  EXPECT_NE(repo.text<CountFor>().find("':not_a_param'"),
            std::string_view::npos);              // literals untouched
  repo.validate(*c_);                             // both are right: no throw
  GetMessages::parameters_type p{42, {1, 2, 4}};  // mid 4 is another user's
  std::vector<GetMessages::row_type> rows;
  std::error_code ec;
  c_->query(repo.make_query<GetMessages>(p), pg::into(rows), ec);
  ASSERT_FALSE(ec) << c_->last_diagnostics().to_string();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(std::get<2>(rows[0]), (std::vector<attach>{attach{"a", "t", 1}}));
  EXPECT_EQ(std::get<1>(rows[1]), "s2");
  std::vector<std::int64_t> n;
  c_->query(repo.make_query<CountFor>(CountFor::parameters_type{42}), pg::into(n));
  EXPECT_EQ(n.at(0), 3);
}

TEST_F(PgRepository, ValidateReportsEveryMismatch) {
  const auto repo =
      pg::query_repository<GetMessages, CountFor, WrongTypes, Broken, WrongRow>::load_file(path_);
  try {
    repo.validate(*c_);
    ADD_FAILURE() << "no throw";
  } catch (const pg::error& e) {
    const std::string& m = e.diag().client_message;
    EXPECT_NE(m.find(path_ + ":13: WrongTypes: 42883: operator does not exist: text = bigint"),
              std::string::npos)
        << m;
    EXPECT_NE(
        m.find(
            path_ +
            ":19: WrongRow: column 1 is text (oid 25) on the server, the C++ type maps to oid 20"),
        std::string::npos)
        << m;
    EXPECT_NE(m.find(path_ + ":16: Broken: 42601"), std::string::npos) << m;  // syntax error
    EXPECT_EQ(m.find("GetMessages"), std::string::npos) << m;
    EXPECT_EQ(m.find("CountFor"), std::string::npos) << m;
  }
}

TEST_F(PgRepository, LoadErrorsNameFileAndLine) {
  const std::string bad =
      write_temp("-- name: GetMessages\nSELECT 1 WHERE :uid = 1\n AND :nope = 2\n");
  try {
    (void)pg::query_repository<GetMessages, CountFor>::load_file(bad);
    ADD_FAILURE() << "no throw";
  } catch (const pg::error& e) {
    const std::string& m = e.diag().client_message;
    EXPECT_NE(
        m.find(bad + ":3: GetMessages: unknown parameter :nope (parameters_type has uid, mids)"),
        std::string::npos)
        << m;
    EXPECT_NE(m.find(bad + ": query \"CountFor\" is not in the file"), std::string::npos) << m;
  }
  std::remove(bad.c_str());
}

TEST_F(PgRepository, ValidateChecksRowsByName) {
  const auto good = pg::query_repository<ByNameGood>::load_file(path_);
  good.validate(*c_);  // columns in another order than the fields: fine
  std::vector<message_by_name> rows;
  c_->query(good.make_query<ByNameGood>({42}), pg::into(rows));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].st_id, "s" + std::to_string(rows[0].mid));

  const auto bad = pg::query_repository<ByNameGood, ByNameBad, WrongCount>::load_file(path_);
  try {
    bad.validate(*c_);
    ADD_FAILURE() << "no throw";
  } catch (const pg::error& e) {
    const std::string& m = e.diag().client_message;
    // Every mismatch of the query on one line: the missing field, both extra columns and
    // the wrong type.
    EXPECT_NE(
        m.find(path_ +
               ":25: ByNameBad: no column for field(s) \"st_id\"; column(s) \"sid\", \"uid\" match "
               "no field; column \"attaches\" is mail.attach[]"),
        std::string::npos)
        << m;
    EXPECT_NE(m.find(path_ + ":28: WrongCount: the query returns 2 columns, row_type has 1"),
              std::string::npos)
        << m;
    EXPECT_EQ(m.find("ByNameGood"), std::string::npos) << m;
  }
}

TEST_F(PgRepository, AsyncValidate) {
  const auto good = pg::query_repository<GetMessages, CountFor, ByNameGood>::load_file(path_);
  const auto bad = pg::query_repository<GetMessages, WrongTypes, Broken, WrongRow, ByNameBad,
                                        WrongCount>::load_file(path_);
  std::string sync_report;
  try {
    bad.validate(*c_);
  } catch (const pg::error& e) {
    sync_report = e.diag().client_message;
  }
  ASSERT_FALSE(sync_report.empty());

  pg::connection_options o;
  o.types = types_;
  pg::connection ac(io_.get_executor(), o);
  bool good_ok = false;
  std::string async_report;
  std::size_t n = 0;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        co_await ac.async_connect(pg_dsn());
        co_await good.async_validate(ac);
        good_ok = true;
        try {
          co_await bad.async_validate(ac);
        } catch (const pg::error& e) {
          EXPECT_EQ(e.code(), pg::errc::invalid_value);
          async_report = e.diag().client_message;
        }
        // The connection is usable afterwards, outside any transaction.
        std::vector<std::int64_t> count;
        n = co_await ac.async_query(good.make_query<CountFor>({42}), pg::into(count));
        EXPECT_TRUE(ac.is_idle_clean());
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io_.run();
  EXPECT_TRUE(good_ok);
  EXPECT_EQ(async_report, sync_report);
  EXPECT_EQ(n, 1u);
  for (const char* q : {":13: WrongTypes: 42883", ":16: Broken: 42601",
                        ":19: WrongRow: column 1 is text", ":25: ByNameBad:", ":28: WrongCount:"})
    EXPECT_NE(async_report.find(path_ + q), std::string::npos) << q << " in " << async_report;
}
