#include <algorithm>
#include <chrono>
#include <functional>
#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>

#include "admin_pace.hpp"
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
    if (s.schema_version >= 3) {
      std::vector<std::int32_t> cp;
      c.query(pg::sql("SELECT bucket FROM mail.copying ORDER BY bucket"), pg::into(cp), ec);
      if (!ec) s.copying = std::move(cp);
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

const std::string channel = "inlet_events";

// The columns a copy is rebuilt from: the summary, raw, and its placement.
const std::string& row_columns() {
  static const std::string c =
      pgs::summary_columns("m", true) + ", m.primary_bucket, m.mailboxes, m.buckets";
  return c;
}

// Rows of `r` (row_columns) as copies for bucket `bucket` on the new shard: never home,
// with the bucket's mailboxes only. Appends to `param` (an array body) and counts.
std::error_code encode_rows(const pg::result& r, const pgs::shard_types& types,
                            std::int32_t bucket, std::vector<std::string>& encoded,
                            std::string* last, bool holding_only = false) {
  const int base = r.columns() - 3;
  for (int i = 0; i < r.rows(); ++i) {
    if (holding_only) {  // rows of several buckets: those of this one
      std::int32_t primary = 0;
      std::vector<std::int32_t> bks;
      r.at(i, base).as(primary);
      r.at(i, base + 2).as(bks);
      bool holds = std::find(bks.begin(), bks.end(), bucket) != bks.end() ||
                   (primary == bucket && bks.empty());
      if (!holds) continue;
    }
    stored_message m;
    if (auto e = pgs::read_summary_row(r, i, true, m)) return e;
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
    pgs::encode_copy(encoded.emplace_back(), types, v);
    if (last) *last = m.id;
  }
  return {};
}

std::string array_param(const pgs::shard_types& types, const std::vector<std::string>& encoded) {
  std::string param;
  pgs::encode_array_header(param, types.new_message, encoded.size());
  for (auto& e : encoded) pgs::encode_element(param, e);
  return param;
}

// Every copy A holds for bucket b, written to B in chunks (each its own transaction; B
// keeps them hidden until it takes the bucket, and a repeated chunk is skipped, so an
// interrupted copy is simply run again). Writes to b go on meanwhile: A notes what they
// change (mail.move_log) and catch_up applies it afterwards.
std::error_code copy_bucket(pg::connection& a, pg::connection& b, const pgs::shard_types& types,
                            std::int32_t bucket, move_result& out, std::string& message) {
  std::error_code ec;
  // The next chunk's keys from the bucket's mailbox rows (the inbox key leads with the
  // bucket) and its messages without recipients (their own index), then those rows: a
  // condition on mail.message alone walks every copy of the shard in ID order.
  const std::string sql =
      "WITH k AS (SELECT i.id, i.received FROM mail.inbox i WHERE i.bucket = $1 AND i.id > $2"
      " AND i.received >= $3 UNION SELECT n.id, n.received FROM mail.message n"
      " WHERE n.primary_bucket = $1 AND n.mailboxes = '{}' AND n.id > $2 AND n.received >= $3"
      " ORDER BY 1 LIMIT 200) SELECT " +
      row_columns() +
      " FROM k JOIN mail.message m ON m.id = k.id AND m.received = k.received ORDER BY m.id";
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
    std::vector<std::string> encoded;
    if (auto e = encode_rows(r, types, bucket, encoded, &last)) {
      message = "decoding a row of the old shard";
      return e;
    }
    auto q = pg::sql("SELECT mail.import_v2($1::mail.new_message_v2[], $2)",
                     pgs::raw_param{array_param(types, encoded)}, bucket);
    b.query(q, ec);
    if (ec) {
      message = "writing bucket rows to the new shard: " + why(b, ec);
      return ec;
    }
    out.copied += encoded.size();
  }
}

// Applies A's notes for the buckets to B, batch after batch, until a batch finds fewer
// notes than it could take (all there were when it read them). Per batch: one query for
// the notes of every bucket of the group (buckets nobody wrote to cost nothing), one for
// the noted copies as A holds them now, and one transaction on B applying each bucket's
// (catch_up_v1: b's part of each noted copy removed, what A holds stored again; one
// commit). Notes are removed from A after B applied them, so an interruption applies them
// again (catch_up_v1 is idempotent). `applied`: how many notes.
//
// `take` (the last catch-up of a switch, writes to the buckets frozen): B takes these
// buckets in the transaction that applies the last notes, and the notes stay on A (read
// past by their sequence; A's leave drops them): two commits fewer while writes wait.
std::error_code catch_up(pg::connection& a, pg::connection& b, const pgs::shard_types& types,
                         const std::vector<std::int32_t>& buckets, std::uint64_t& applied,
                         std::string& message, const std::vector<std::int32_t>* take = nullptr) {
  constexpr std::int64_t batch = 1000;
  static const std::string rows_sql =
      "SELECT " + row_columns() +
      " FROM mail.message m JOIN unnest($1::text[], $2::timestamptz[]) AS x(id, received)"
      " ON m.id = x.id AND m.received = x.received";
  std::error_code ec;
  std::int64_t after = 0;  // with `take`: the notes applied so far
  auto take_now = [&](pg::batch& tx) {
    tx.add("SELECT mail.take_buckets_v1($1, $2)", *take, channel);
  };
  for (;;) {
    std::vector<std::tuple<std::int64_t, std::int32_t, std::string, pg::timestamptz>> notes;
    a.query(pg::sql("SELECT seq, bucket, id, received FROM mail.move_log WHERE bucket = ANY ($1) "
                    "AND seq > $3 ORDER BY seq LIMIT $2",
                    buckets, batch, after),
            pg::into(notes), ec);
    if (ec) {
      message = "reading the old shard's change notes: " + why(a, ec);
      return ec;
    }
    if (notes.empty()) {
      if (take && !take->empty()) {
        pg::batch tx;
        tx.add("BEGIN");
        take_now(tx);
        tx.add("COMMIT");
        b.execute(std::move(tx), ec);
        if (ec) {
          message = "taking the buckets on the new shard: " + why(b, ec);
          std::error_code ignored;
          b.execute(pg::query<>("ROLLBACK"), ignored);
        }
      }
      return ec;
    }
    const bool last = static_cast<std::int64_t>(notes.size()) < batch;
    std::vector<std::int64_t> seqs;
    using key = std::pair<std::string, pg::timestamptz>;
    std::map<std::int32_t, std::vector<key>> by_bucket;
    std::vector<key> all;
    for (auto& [seq, bk, id, rcvd] : notes) {
      seqs.push_back(seq);
      by_bucket[bk].emplace_back(id, rcvd);
      all.emplace_back(id, rcvd);
    }
    auto split = [](std::vector<key>& keys, std::vector<std::string>& ids,
                    std::vector<pg::timestamptz>& rcvd) {
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      for (auto& [id, t] : keys) ids.push_back(id), rcvd.push_back(t);
    };
    std::vector<std::string> all_ids;
    std::vector<pg::timestamptz> all_rcvd;
    split(all, all_ids, all_rcvd);
    auto r = a.query(pg::sql(rows_sql, all_ids, all_rcvd), ec);
    if (ec) {
      message = "reading changed rows from the old shard: " + why(a, ec);
      return ec;
    }
    pg::batch apply;
    apply.add("BEGIN");
    for (auto& [bk, keys] : by_bucket) {
      std::vector<std::string> ids;
      std::vector<pg::timestamptz> rcvd;
      split(keys, ids, rcvd);
      std::vector<std::string> encoded;
      if (auto e = encode_rows(r, types, bk, encoded, nullptr, true)) {
        message = "decoding a row of the old shard";
        return e;
      }
      apply.add("SELECT mail.catch_up_v1($1::mail.new_message_v2[], $2, $3, $4)",
                pgs::raw_param{array_param(types, encoded)}, ids, rcvd, bk);
    }
    if (take && last && !take->empty()) take_now(apply);
    apply.add("COMMIT");
    b.execute(std::move(apply), ec);
    if (ec) {
      message = "applying changes to the new shard: " + why(b, ec);
      std::error_code ignored;
      b.execute(pg::query<>("ROLLBACK"), ignored);
      return ec;
    }
    applied += notes.size();
    if (take) {
      after = std::get<0>(notes.back());
      if (last) return {};
      continue;
    }
    a.query(pg::sql("DELETE FROM mail.move_log WHERE seq = ANY ($1)", seqs), ec);
    if (ec) {
      message = "removing applied change notes: " + why(a, ec);
      return ec;
    }
    if (last) return {};
  }
}

// Connections to every shard, opened once for a whole rebalance.
struct session {
  std::vector<std::unique_ptr<link>> links;
  std::vector<std::optional<pgs::shard_types>> types;
  switch_pace pace;

  std::error_code open_all(const std::vector<std::string>& shards, std::string& message) {
    links.resize(shards.size());
    types.resize(shards.size());
    for (unsigned i = 0; i < shards.size(); ++i) {
      std::string err;
      links[i] = open(shards[i], err);
      if (!links[i]) {
        message = "shard " + std::to_string(i) + " (" + pgs::dsn_endpoint(shards[i]) +
                  ") unreachable: " + err;
        return make_error_code(errc::unavailable);
      }
    }
    return {};
  }
  pg::connection& at(unsigned i) { return *links[i]->conn; }
  const pgs::shard_types* types_of(unsigned i, std::string& message) {
    if (!types[i]) {
      std::error_code ec;
      auto t = load_types(at(i), ec);
      if (ec || !t.complete()) {
        message = "shard " + std::to_string(i) + ": cannot read its types: " + why(at(i), ec);
        return nullptr;
      }
      types[i] = t;
    }
    return &*types[i];
  }
  // Every bucket's state on every shard.
  std::error_code states(std::vector<std::map<std::int32_t, std::string>>& out,
                         std::string& message) {
    out.assign(links.size(), {});
    for (unsigned i = 0; i < links.size(); ++i) {
      std::error_code ec;
      std::vector<std::tuple<std::int32_t, std::string>> rows;
      at(i).query(pg::sql("SELECT bucket, state FROM mail.bucket"), pg::into(rows), ec);
      if (ec) {
        message = "shard " + std::to_string(i) + ": " + why(at(i), ec);
        return ec;
      }
      for (auto& [b, st] : rows) out[i][b] = st;
    }
    return {};
  }
};

using steady = std::chrono::steady_clock;

// Moves `buckets` from shard `from` to shard `to` together: every change of state is
// one transaction for all of them (one commit and one notification), the copies and
// catch-ups go bucket by bucket. Each bucket's states are checked first, so a group
// interrupted anywhere is finished by running it again.
std::error_code move_group(session& s, unsigned from, unsigned to,
                           const std::vector<std::int32_t>& buckets,
                           const std::vector<std::map<std::int32_t, std::string>>& where,
                           move_result& out, std::string& message,
                           const std::function<void()>& after_copy = {},
                           const std::function<bool()>& after_take = {}) {
  auto& a = s.at(from);
  auto& b = s.at(to);
  auto st = [&](unsigned shard, std::int32_t bk) {
    auto it = where[shard].find(bk);
    return it == where[shard].end() ? std::string() : it->second;
  };
  std::error_code ec;
  auto call = [&](pg::connection& c, const auto& q, const char* what) {
    auto r = c.query(q, ec);
    if (ec) message = std::string(what) + ": " + why(c, ec);
    return r;
  };
  std::vector<std::int32_t> expect, copy, live, take, leave;
  for (auto bk : buckets) {
    auto sa = st(from, bk), sb = st(to, bk);
    if (sb.empty()) expect.push_back(bk);
    if (sb.empty() || sb == "incoming") {
      if (sa == "owned" || sa == "frozen") copy.push_back(bk);
      if (sa == "owned") live.push_back(bk);
      take.push_back(bk);
    }
    if (sa == "owned" || sa == "frozen") leave.push_back(bk);
  }
  if (!expect.empty()) {
    call(b, pg::sql("SELECT mail.expect_buckets_v1($1)", expect),
         "marking the buckets incoming on the new shard");
    if (ec) return ec;
  }
  const pgs::shard_types* types = nullptr;
  if (!copy.empty()) {
    call(a, pg::sql("SELECT mail.start_copy_v1($1)", copy),
         "noting changes of the buckets on the old shard");
    if (ec) return ec;
    types = s.types_of(to, message);
    if (!types) return make_error_code(errc::unavailable);
  }
  std::map<std::int32_t, std::uint64_t> copies_of;  // what each bucket's copy wrote
  for (auto bk : copy) {
    const auto before = out.copied;
    if ((ec = copy_bucket(a, b, *types, bk, out, message))) return ec;
    copies_of[bk] = out.copied - before;
  }
  if (!copy.empty() && after_copy) after_copy();
  // What changed during the copy, while writes go on; a few passes, until a pass finds
  // little, so that what is left for the frozen moment is short.
  auto catch_up_live = [&](const std::vector<std::int32_t>& which) {
    for (int pass = 0; pass < 20 && !which.empty(); ++pass) {
      std::uint64_t n = 0;
      if ((ec = catch_up(a, b, *types, which, n, message))) return;
      out.caught_up += n;
      if (n < 50) break;
    }
  };
  catch_up_live(copy);
  if (ec) return ec;
  auto among = [](const std::vector<std::int32_t>& all, const std::vector<std::int32_t>& part) {
    std::vector<std::int32_t> v;
    for (auto bk : all)
      if (std::find(part.begin(), part.end(), bk) != part.end()) v.push_back(bk);
    return v;
  };
  // The switch, in parts the pace allows.
  for (std::size_t i = 0; i < buckets.size();) {
    std::vector<std::int32_t> part;
    std::uint64_t part_copies = 0;
    for (; i < buckets.size() && part.size() < s.pace.buckets; ++i) {
      auto c = copies_of.count(buckets[i]) ? copies_of[buckets[i]] : 0;
      if (!part.empty() && part_copies + c > s.pace.copies) break;
      part.push_back(buckets[i]);
      part_copies += c;
    }
    auto p_live = among(live, part), p_copy = among(copy, part), p_take = among(take, part),
         p_leave = among(leave, part);
    if (part.front() != buckets.front()) {  // notes of this part since the first passes
      catch_up_live(p_copy);
      if (ec) return ec;
    }
    auto frozen_at = steady::now();
    if (!p_live.empty()) {
      call(a, pg::sql("SELECT mail.freeze_buckets_v1($1, $2)", p_live, channel),
           "freezing the buckets on the old shard");
      if (ec) return ec;
      frozen_at = steady::now();
    }
    if (!p_copy.empty()) {  // the last notes, and the take in the same transaction on B
      std::uint64_t n = 0;
      if ((ec = catch_up(a, b, *types, p_copy, n, message, &p_take))) return ec;
      out.caught_up += n;
    } else if (!p_take.empty()) {
      call(b, pg::sql("SELECT mail.take_buckets_v1($1, $2)", p_take, channel),
           "taking the buckets on the new shard");
      if (ec) return ec;
    }
    if (!p_live.empty()) {
      const double held =
          std::chrono::duration<double, std::milli>(steady::now() - frozen_at).count();
      out.frozen_ms = std::max(out.frozen_ms, held);
      ++out.switches;
      out.held_ms.push_back(held);
      s.pace.learn(part.size(), part_copies, held);
    }
    if (after_take && !after_take()) {
      message = "stopped after the take";
      return std::make_error_code(std::errc::operation_canceled);
    }
    if (!p_leave.empty()) {
      call(a, pg::sql("SELECT mail.leave_buckets_v2($1, $2)", p_leave, channel),
           "leaving the buckets on the old shard");
      if (ec) return ec;
    }
  }
  auto r = call(a, pg::sql("SELECT mail.release_buckets_v1($1)", buckets),
                "removing the buckets from the old shard");
  if (ec) return ec;
  std::int64_t released = 0;
  if (scalar(a, r, released)) out.released += static_cast<std::uint64_t>(released);
  return {};
}

// Where a bucket is moved from: the shard that holds it other than `to` (-1: none).
int source_of(const std::vector<std::map<std::int32_t, std::string>>& where, std::int32_t bucket,
              unsigned to) {
  for (unsigned i = 0; i < where.size(); ++i) {
    if (i == to) continue;
    auto it = where[i].find(bucket);
    if (it != where[i].end() &&
        (it->second == "owned" || it->second == "frozen" || it->second == "gone"))
      return static_cast<int>(i);
  }
  return -1;
}

std::string describe_states(const std::vector<std::map<std::int32_t, std::string>>& where,
                            std::int32_t bucket) {
  std::string m = "bucket " + std::to_string(bucket) + " has no owner (states:";
  for (unsigned i = 0; i < where.size(); ++i)
    if (auto it = where[i].find(bucket); it != where[i].end())
      m += " shard " + std::to_string(i) + " " + it->second;
  return m + ")";
}

}  // namespace

std::error_code move_bucket(const std::vector<std::string>& shards, std::uint32_t bucket_u,
                            unsigned to, move_result& out, std::string& message,
                            const std::function<void()>& after_copy,
                            const std::function<bool()>& after_take) {
  out = {};
  out.to = to;
  auto bucket = static_cast<std::int32_t>(bucket_u);
  if (to >= shards.size()) {
    message = "no shard " + std::to_string(to);
    return make_error_code(errc::invalid_argument);
  }
  session s;
  if (auto ec = s.open_all(shards, message)) return ec;
  std::vector<std::map<std::int32_t, std::string>> where;
  if (auto ec = s.states(where, message)) return ec;
  int from = source_of(where, bucket, to);
  if (from < 0) {
    auto it = where[to].find(bucket);
    if (it != where[to].end() && it->second == "owned") {
      out.already_there = true;
      return {};
    }
    message = describe_states(where, bucket);
    return make_error_code(errc::unavailable);
  }
  out.from = static_cast<unsigned>(from);
  return move_group(s, out.from, to, {bucket}, where, out, message, after_copy, after_take);
}

std::error_code move_buckets(const std::vector<std::string>& shards,
                             const std::vector<std::pair<std::uint32_t, unsigned>>& moves,
                             std::size_t group_size, move_result& out, std::string& message,
                             const std::function<void(std::size_t done)>& progress) {
  out = {};
  session s;
  if (auto ec = s.open_all(shards, message)) return ec;
  std::vector<std::map<std::int32_t, std::string>> where;
  if (auto ec = s.states(where, message)) return ec;
  if (group_size == 0) group_size = 1;
  s.pace = switch_pace(group_size);
  // Moves between the same two shards, in plan order, grouped.
  std::map<std::pair<unsigned, unsigned>, std::vector<std::int32_t>> by_pair;
  for (auto [bu, to] : moves) {
    auto bucket = static_cast<std::int32_t>(bu);
    if (to >= shards.size()) {
      message = "no shard " + std::to_string(to);
      return make_error_code(errc::invalid_argument);
    }
    int from = source_of(where, bucket, to);
    if (from < 0) {
      auto it = where[to].find(bucket);
      if (it != where[to].end() && it->second == "owned") continue;
      message = describe_states(where, bucket);
      return make_error_code(errc::unavailable);
    }
    by_pair[{static_cast<unsigned>(from), to}].push_back(bucket);
  }
  std::size_t done = 0;
  for (auto& [pair, list] : by_pair) {
    for (std::size_t i = 0; i < list.size(); i += group_size) {
      std::vector<std::int32_t> group(
          list.begin() + static_cast<std::ptrdiff_t>(i),
          list.begin() + static_cast<std::ptrdiff_t>(std::min(list.size(), i + group_size)));
      if (auto ec = move_group(s, pair.first, pair.second, group, where, out, message)) {
        message = "moving buckets " + std::to_string(group.front()) + ".. from shard " +
                  std::to_string(pair.first) + " to " + std::to_string(pair.second) + ": " +
                  message;
        return ec;
      }
      done += group.size();
      if (progress) progress(done);
    }
  }
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
