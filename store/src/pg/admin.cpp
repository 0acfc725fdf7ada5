#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>

#include "engine.hpp"
#include "inlet/store/pg_admin.hpp"
#include "params.hpp"
#include "reads.hpp"
#include "wire.hpp"

namespace inlet::store::pg_admin {

namespace {

namespace pgs = inlet::store::pgstore;

struct link {
  boost::asio::io_context io;  // the synchronous forms never run it
  std::unique_ptr<pg::connection> conn;
};

std::unique_ptr<link> open(const std::string& dsn, std::string& error) {
  auto l = std::make_unique<link>();
  l->conn = std::make_unique<pg::connection>(l->io.get_executor());
  std::error_code ec;
  l->conn->connect(pgs::set_dsn_param(pgs::with_dsn_param(dsn, "connect_timeout", "5"),
                                      "target_session_attrs", "read-write"),
                   ec);
  if (ec) {
    error = l->conn->last_diagnostics().to_string();
    if (error.empty()) error = ec.message();
    return nullptr;
  }
  l->conn->execute(pg::query<>("SET client_min_messages = warning"), ec);
  return l;
}

std::string why(pg::connection& c, std::error_code ec) {
  auto d = c.last_diagnostics().to_string();
  return d.empty() ? ec.message() : d;
}

template <class T>
bool scalar(pg::connection& c, const pg::result& r, T& out) {
  (void)c;
  return r.rows() == 1 && !r.at(0, 0).as(out);
}

pgs::shard_types load_types(pg::connection& c, std::error_code& ec) {
  pgs::shard_types t;
  std::vector<std::tuple<std::string, std::uint32_t, std::uint32_t>> rows;
  c.query(pg::sql("SELECT typname::text, oid, typarray FROM pg_type WHERE typnamespace = "
                  "'mail'::regnamespace "
                  "AND typname IN ('addr', 'attach', 'new_message_v2')"),
          pg::into(rows), ec);
  for (auto& [name, oid, array] : rows) {
    if (name == "addr")
      t.addr = oid, t.addr_array = array;
    else if (name == "attach")
      t.attach = oid, t.attach_array = array;
    else if (name == "new_message_v2")
      t.new_message = oid, t.new_message_array = array;
  }
  return t;
}

}  // namespace

std::vector<shard_status> status(const std::vector<std::string>& shards) {
  std::vector<shard_status> out;
  for (unsigned i = 0; i < shards.size(); ++i) {
    shard_status s;
    s.index = i;
    s.endpoint = pgs::dsn_endpoint(shards[i]);
    auto l = open(shards[i], s.error);
    if (!l) {
      out.push_back(std::move(s));
      continue;
    }
    auto& c = *l->conn;
    s.reachable = true;
    std::error_code ec;
    std::vector<std::int32_t> v;
    c.query(pg::sql("SELECT coalesce(max(version), 0) FROM mail.migration"), pg::into(v), ec);
    if (ec) {
      s.error = "no schema: " + why(c, ec);
      out.push_back(std::move(s));
      continue;
    }
    s.schema_version = v.empty() ? 0 : v.front();
    std::vector<std::optional<std::string>> idx;
    c.query(pg::sql("SELECT (SELECT value FROM mail.meta WHERE key = 'shard')"), pg::into(idx), ec);
    if (!ec && !idx.empty() && idx.front()) s.shard_index = std::stoi(*idx.front());
    std::vector<std::optional<std::string>> nb;
    c.query(pg::sql("SELECT (SELECT value FROM mail.meta WHERE key = 'buckets')"), pg::into(nb),
            ec);
    if (!ec && !nb.empty() && nb.front())
      s.buckets = static_cast<std::uint32_t>(std::stoul(*nb.front()));
    std::vector<std::tuple<std::int32_t, std::string>> b;
    c.query(pg::sql("SELECT bucket, state FROM mail.bucket ORDER BY bucket"), pg::into(b), ec);
    for (auto& [bucket, state] : b) {
      if (state == "owned")
        s.owned.push_back(bucket);
      else if (state == "frozen")
        s.frozen.push_back(bucket);
      else if (state == "incoming")
        s.incoming.push_back(bucket);
      else
        s.gone.push_back(bucket);
    }
    std::vector<std::tuple<std::int64_t, std::int64_t>> n;
    c.query(pg::sql("SELECT (SELECT coalesce(sum(messages), 0)::int8 FROM mail.tally), "
                    "(SELECT count(*) FROM mail.message)"),
            pg::into(n), ec);
    if (!n.empty()) std::tie(s.messages, s.copies) = n.front();
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// Step 3: every copy A holds for bucket b, written to B in chunks (each its own
// transaction; B keeps them hidden until it takes the bucket, and a repeated chunk is
// skipped, so an interrupted copy is simply run again).
std::error_code copy_bucket(pg::connection& a, pg::connection& b, std::int32_t bucket,
                            move_result& out, std::string& message) {
  std::error_code ec;
  auto types = load_types(b, ec);
  if (ec || !types.complete()) {
    message = "target shard: cannot read its types: " + why(b, ec);
    return ec ? ec : make_error_code(errc::unavailable);
  }
  const std::string sql = "SELECT " + pgs::summary_columns("m", true) +
                          ", m.primary_bucket, m.mailboxes, m.buckets"
                          " FROM mail.message m WHERE m.id > $2 AND ((m.id, m.received) IN "
                          "(SELECT i.id, i.received FROM mail.inbox i WHERE i.bucket = $1) OR "
                          "(m.primary_bucket = $1 AND m.mailboxes = "
                          "'{}')) AND m.received >= $3 ORDER BY m.id LIMIT 200";
  // Rows older than the target's oldest partition have expired there already.
  std::vector<std::optional<pg::timestamptz>> oldest;
  b.query(pg::sql("SELECT min(lower) FROM mail.part"), pg::into(oldest), ec);
  pg::timestamptz since =
      !oldest.empty() && oldest.front() ? *oldest.front() : pg::timestamptz::min();
  std::string last;
  for (;;) {
    auto r = a.query(pg::sql(sql, bucket, last, since), ec);
    if (ec) {
      message = "reading bucket rows from the old shard: " + why(a, ec);
      return ec;
    }
    if (r.rows() == 0) return {};
    std::vector<std::string> encoded(static_cast<std::size_t>(r.rows()));
    const int base = r.columns() - 3;
    for (int i = 0; i < r.rows(); ++i) {
      stored_message m;
      if (auto e = pgs::read_summary_row(r, i, true, m)) {
        message = "decoding a row of the old shard";
        return e;
      }
      std::int32_t primary = 0;
      std::vector<std::string> boxes;
      std::vector<std::int32_t> bks;
      r.at(i, base).as(primary);
      r.at(i, base + 1).as(boxes);
      r.at(i, base + 2).as(bks);
      std::vector<std::string> mine;
      std::vector<std::int32_t> mine_b;
      for (std::size_t k = 0; k < boxes.size() && k < bks.size(); ++k) {
        if (bks[k] != bucket) continue;
        mine.push_back(boxes[k]);
        mine_b.push_back(bks[k]);
      }
      auto us = static_cast<std::int64_t>(m.seq);  // arrival: the ID's time and the partition key
      pgs::copy_view v{&m, us, false, primary, &mine, &mine_b, m.is_read()};
      pgs::encode_copy(encoded[static_cast<std::size_t>(i)], types, v);
      last = m.id;
    }
    std::string param;
    pgs::encode_array_header(param, types.new_message, encoded.size());
    for (auto& e : encoded) pgs::encode_element(param, e);
    auto q = pg::sql("SELECT mail.import_v2($1::mail.new_message_v2[], $2)",
                     pgs::raw_param{std::move(param)}, bucket);
    b.query(q, ec);
    if (ec) {
      message = "writing bucket rows to the new shard: " + why(b, ec);
      return ec;
    }
    out.copied += encoded.size();
  }
}

}  // namespace

std::error_code move_bucket(const std::vector<std::string>& shards, std::uint32_t bucket_u,
                            unsigned to, move_result& out, std::string& message) {
  out = {};
  out.to = to;
  auto bucket = static_cast<std::int32_t>(bucket_u);
  if (to >= shards.size()) {
    message = "no shard " + std::to_string(to);
    return make_error_code(errc::invalid_argument);
  }
  std::vector<std::unique_ptr<link>> links(shards.size());
  for (unsigned i = 0; i < shards.size(); ++i) {
    std::string err;
    links[i] = open(shards[i], err);
    if (!links[i]) {
      message = "shard " + std::to_string(i) + " (" + pgs::dsn_endpoint(shards[i]) +
                ") unreachable: " + err;
      return make_error_code(errc::unavailable);
    }
  }
  // Where is the bucket now, and in which state?
  std::map<unsigned, std::string> where;
  for (unsigned i = 0; i < shards.size(); ++i) {
    std::error_code ec;
    std::vector<std::string> st;
    links[i]->conn->query(pg::sql("SELECT state FROM mail.bucket WHERE bucket = $1", bucket),
                          pg::into(st), ec);
    if (ec) {
      message = "shard " + std::to_string(i) + ": " + why(*links[i]->conn, ec);
      return ec;
    }
    if (!st.empty()) where[i] = st.front();
  }
  int from = -1;
  for (auto& [i, st] : where)
    if (i != to && (st == "owned" || st == "frozen" || st == "gone")) from = static_cast<int>(i);
  if (from < 0) {
    if (where.count(to) && where[to] == "owned") {
      out.already_there = true;
      return {};
    }
    message = "bucket " + std::to_string(bucket) + " has no owner (states:";
    for (auto& [i, st] : where) message += " shard " + std::to_string(i) + " " + st;
    message += ")";
    return make_error_code(errc::unavailable);
  }
  out.from = static_cast<unsigned>(from);
  auto& a = *links[static_cast<std::size_t>(from)]->conn;
  auto& b = *links[to]->conn;
  const std::string channel = "inlet_events";
  std::error_code ec;
  auto step = [&](pg::connection& c, const auto& q, const char* what) {
    auto r = c.query(q, ec);
    if (ec) message = std::string(what) + ": " + why(c, ec);
    return r;
  };
  std::string a_state = where[static_cast<unsigned>(from)];
  std::string b_state = where.count(to) ? where[to] : "";
  if (b_state.empty() || b_state == "incoming") {
    if (a_state == "owned" || a_state == "frozen") {
      step(b, pg::sql("SELECT mail.expect_bucket_v1($1)", bucket),
           "marking the bucket incoming on the new shard");
      if (ec) return ec;
      step(a, pg::sql("SELECT mail.freeze_bucket_v1($1, $2)", bucket, channel),
           "freezing the bucket on the old shard");
      if (ec) return ec;
      if ((ec = copy_bucket(a, b, bucket, out, message))) return ec;
      step(a, pg::sql("SELECT mail.leave_bucket_v1($1, $2)", bucket, channel),
           "leaving the bucket on the old shard");
      if (ec) return ec;
      a_state = "gone";
    }
    if (a_state == "gone") {
      step(b, pg::sql("SELECT mail.take_bucket_v1($1, $2)", bucket, channel),
           "taking the bucket on the new shard");
      if (ec) return ec;
      b_state = "owned";
    }
  }
  if (b_state != "owned") {
    message = "unexpected states: old shard " + a_state + ", new shard " + b_state;
    return make_error_code(errc::unavailable);
  }
  auto r = step(a, pg::sql("SELECT mail.release_bucket_v1($1)", bucket),
                "removing the bucket from the old shard");
  if (ec) return ec;
  std::int64_t released = 0;
  if (scalar(a, r, released)) out.released = static_cast<std::uint64_t>(released);
  return {};
}

std::vector<std::pair<std::uint32_t, unsigned>> plan_rebalance(
    const std::vector<shard_status>& st) {
  std::vector<std::pair<std::uint32_t, unsigned>> moves;
  if (st.empty()) return moves;
  std::vector<std::vector<std::int32_t>> have;
  std::size_t total = 0;
  for (auto& s : st) {
    have.push_back(s.owned);
    total += s.owned.size();
  }
  const std::size_t n = st.size();
  for (;;) {
    std::size_t big = 0, small = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (have[i].size() > have[big].size()) big = i;
      if (have[i].size() < have[small].size()) small = i;
    }
    if (have[big].size() <= have[small].size() + 1) break;
    auto b = have[big].back();
    have[big].pop_back();
    have[small].push_back(b);
    moves.emplace_back(static_cast<std::uint32_t>(b), static_cast<unsigned>(small));
  }
  (void)total;
  return moves;
}

}  // namespace inlet::store::pg_admin
