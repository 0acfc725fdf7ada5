#include "inlet/store/file_store.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <condition_variable>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

#include "file/codec.hpp"
#include "file/mailpit.hpp"
#include "file/query.hpp"
#include "file/schema.hpp"
#include "file/sqlite.hpp"

namespace inlet::store {

using namespace file;

namespace {

// More changed messages than this in one call are announced as one `cleared` event.
constexpr std::size_t max_event_ids = 1000;
// A raw message larger than this is refused on read (a damaged length).
constexpr std::size_t max_raw_bytes = std::size_t{1} << 31;

std::int64_t ns_of(time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
time_point from_ns(std::int64_t ns) {
  return time_point(std::chrono::duration_cast<time_point::duration>(std::chrono::nanoseconds(ns)));
}

template <class Handler, class... Args>
void complete(Handler h, Args... args) {
  auto ex = asio::get_associated_executor(h);
  asio::dispatch(
      ex, [h = std::move(h), ... a = std::move(args)]() mutable { std::move(h)(std::move(a)...); });
}

std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    auto nl = s.find('\n');
    out.emplace_back(s.substr(0, nl));
    if (nl == std::string_view::npos) break;
    s.remove_prefix(nl + 1);
  }
  return out;
}

std::string join_lines(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += '\n';
    out += s;
  }
  return out;
}

// "\nfolded1\nfolded2\n" ("" without tags): a whole tag is the substring "\nvalue\n".
std::string folded_tags(const std::vector<std::string>& tags) {
  if (tags.empty()) return {};
  std::string out = "\n";
  for (const auto& t : tags) {
    out += search::fold_case(t);
    out += '\n';
  }
  return out;
}

// Distinct non-empty tags (compared folded), first spelling and order kept.
std::vector<std::string> distinct_tags(std::vector<std::string> tags) {
  std::vector<std::string> out, seen;
  for (auto& t : tags) {
    if (t.empty()) continue;
    auto f = search::fold_case(t);
    if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
    seen.push_back(std::move(f));
    out.push_back(std::move(t));
  }
  return out;
}

// Distinct normalised mailboxes of the envelope, in recipient order.
std::vector<std::string> mailboxes_of(const recipient_list& rcpt) {
  std::vector<std::string> out;
  for (const auto& r : rcpt) {
    auto m = normalize_mailbox(r);
    if (m.empty() || std::find(out.begin(), out.end(), m) != out.end()) continue;
    out.push_back(std::move(m));
  }
  return out;
}

std::error_code code_of(const sqlite_error& e) {
  switch (e.primary()) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return errc::corrupt;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return errc::timeout;
    default:
      return errc::unavailable;
  }
}

// The columns a listing reads, in the order row_to_message() takes them.
constexpr const char* row_columns = "m.seq, m.id, m.created, m.size, m.read, m.tags, m.meta";


// Carries a handler into a job and out again exactly once.
template <class H>
struct shared_handler {
  std::shared_ptr<std::optional<H>> h;
  explicit shared_handler(H x) : h(std::make_shared<std::optional<H>>(std::move(x))) {}
  template <class... A>
  void operator()(A&&... a) const {
    if (!*h) return;
    auto local = std::move(**h);
    h->reset();
    complete(std::move(local), std::forward<A>(a)...);
  }
};

}  // namespace

// ---------------------------------------------------------------- implementation

struct file_store::impl {
  // What a row says about a message that a change needs (not its summary).
  struct row_ref {
    std::int64_t seq = 0;
    std::string id;
    bool read = false;
    std::string tags;       // display, '\n'-joined
    std::string mailboxes;  // '\n'-joined
    std::int64_t size = 0;
  };
  // A row of `SELECT seq, id, read, tags, mailboxes, size ...`, at the statement's step.
  static row_ref row_of(statement& st) {
    row_ref r;
    r.seq = st.int64(0);
    r.id = std::string(st.bytes(1));
    r.read = st.int64(2) != 0;
    r.tags = std::string(st.bytes(3));
    r.mailboxes = std::string(st.bytes(4));
    r.size = st.int64(5);
    return r;
  }
  struct counts {
    std::int64_t messages = 0, unread = 0, bytes = 0;
  };
  struct tag_info {
    std::string name;
    std::size_t count = 0;
  };

  // A unit of work for the writer: applied inside the batch transaction (in a
  // savepoint of its own), then told the outcome after the commit.
  struct job {
    virtual ~job() = default;
    virtual void apply(impl& s) = 0;     // throws sqlite_error to roll this job back
    virtual void committed(impl& s) = 0;  // events, then the caller's completion
    virtual void failed(std::error_code ec) = 0;
    std::size_t bytes = 0;  // counted against max_batch_bytes
  };

  file_store_config cfg;
  table_names t;
  connection wdb;  // the writer's (writer thread only, after construction)
  statement ins_message, ins_raw, ins_box;  // the writer's, prepared on first use

  // ---- writer-thread state ----
  counts tx;                                          // as of the open transaction
  std::map<std::string, tag_info, std::less<>> tags;  // folded -> spelling, count
  bool tags_dirty = false;
  bool deleted_in_batch = false;

  // ---- published after each commit ----
  mutable std::mutex pub_mutex;
  counts committed;
  std::vector<std::string> tag_names;  // sorted by folded name
  std::atomic<std::uint64_t> stored_total{0}, evicted_total{0}, deleted_total{0},
      rejected_total{0};
  std::atomic<std::uint64_t> n_batches{0}, n_jobs{0}, max_jobs{0}, n_syncs{0};
  std::atomic<bool> broken{false};
  std::string broken_detail;  // under pub_mutex

  // ---- observers ----
  mutable std::mutex observers_mutex;
  std::uint64_t next_observer = 1;
  std::map<std::uint64_t, std::shared_ptr<const event_observer>> observers;
  std::atomic<std::size_t> observer_count{0};

  // ---- writer queue ----
  std::mutex wq_mutex;
  std::condition_variable wq_cv;
  std::deque<std::unique_ptr<job>> wq;
  bool stopping = false;
  std::chrono::steady_clock::time_point next_sweep;
  std::thread writer;

  // ---- readers ----
  std::mutex rq_mutex;
  std::condition_variable rq_cv;
  std::deque<std::function<void(connection&)>> rq;
  bool readers_stop = false;
  std::vector<std::thread> readers;

  // ---- WAL checkpoints, off the writer's path ----
  // The writer's commits only append to the WAL; this thread copies the WAL back into the
  // database (PASSIVE: it never blocks the writer or the readers), when the writer says
  // the WAL has grown past checkpoint_pages. SQLite's own automatic checkpoint would run
  // inside the writer's commit and hold up every put waiting on that batch.
  static constexpr int checkpoint_pages = 4000;     // ~16 MB of 4 KiB pages
  static constexpr int restart_pages = 64000;       // the WAL keeps growing: wait for readers
  std::mutex ck_mutex;
  std::condition_variable ck_cv;
  int wal_pages = 0;  // last size the writer reported (under ck_mutex)
  bool ck_stop = false;
  std::thread checkpointer;
  std::atomic<std::uint64_t> checkpoints{0};

  static int on_wal_commit(void* self, sqlite3*, const char*, int pages) {
    auto* s = static_cast<impl*>(self);
    if (pages >= checkpoint_pages) {
      {
        std::lock_guard lk(s->ck_mutex);
        s->wal_pages = pages;
      }
      s->ck_cv.notify_one();
    }
    return SQLITE_OK;
  }

  void checkpoint_loop(connection& c) {
    std::unique_lock lk(ck_mutex);
    for (;;) {
      ck_cv.wait(lk, [&] { return ck_stop || wal_pages >= checkpoint_pages; });
      if (ck_stop) return;
      const int pages = wal_pages;
      wal_pages = 0;
      lk.unlock();
      int log = 0, done = 0;
      sqlite3_wal_checkpoint_v2(
          c.get(), nullptr, pages >= restart_pages ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_PASSIVE,
          &log, &done);
      checkpoints.fetch_add(1, std::memory_order_relaxed);
      lk.lock();
    }
  }

  explicit impl(file_store_config c) : cfg(std::move(c)), t(cfg.tenant_id) {
    if (cfg.compression < 0 || cfg.compression > 3)
      throw std::invalid_argument("compression must be 0-3, not " +
                                  std::to_string(cfg.compression));
    auto opened = open_store_file(cfg, t);
    wdb = std::move(opened.writer);
    if (opened.import_mailpit) {
      try {
        reload_tags();
        import_mailpit();
      } catch (const sqlite_error& e) {
        try {
          wdb.exec("ROLLBACK");
        } catch (const sqlite_error&) {
        }
        throw file_store_error(code_of(e), cfg.path + ": importing the Mailpit database failed: " +
                                               e.what() + " (nothing imported)");
      }
    }
    load_state();
    publish();
    if (cfg.max_age.count() > 0) next_sweep = std::chrono::steady_clock::now() + sweep_interval();
    for (unsigned i = 0; i < std::max(1u, cfg.reader_threads); ++i) {
      // Opened here so a failure surfaces from the constructor.
      auto c = std::make_shared<connection>(open_reader(cfg));
      readers.emplace_back([this, c] { reader_loop(*c); });
    }
    if (cfg.wal) {
      // The writer's WAL file, as SQLite's VFS opened it: it stays open as long as the
      // connection does. Syncing through the VFS (not an fsync of a descriptor of our
      // own) also syncs the directory of a WAL file that is new, and keeps a VFS that
      // wraps the default one (a test's power-cut simulation) in the picture.
      sqlite3_file* wf = nullptr;
      if (sqlite3_file_control(wdb.get(), "main", SQLITE_FCNTL_JOURNAL_POINTER, &wf) == SQLITE_OK &&
          wf && wf->pMethods)
        wal_file = wf;
      if (wal_file) {
        wdb.exec("PRAGMA synchronous=NORMAL");  // the syncer fsyncs (see sync_loop)
        syncer = std::thread([this] { sync_loop(); });
      }
      auto c = std::make_shared<connection>(cfg.path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX);
      sqlite3_busy_timeout(c->get(), 10'000);
      c->exec("PRAGMA synchronous=FULL");
      sqlite3_wal_hook(wdb.get(), &impl::on_wal_commit, this);  // replaces the automatic one
      checkpointer = std::thread([this, c] { checkpoint_loop(*c); });
    }
    writer = std::thread([this] { writer_loop(); });
  }

  ~impl() {
    {
      std::lock_guard lk(wq_mutex);
      stopping = true;
    }
    wq_cv.notify_all();
    if (writer.joinable()) writer.join();
    {
      std::lock_guard lk(sq_mutex);
      sq_stop = true;
    }
    sq_cv.notify_all();
    if (syncer.joinable()) syncer.join();
    {
      std::lock_guard lk(rq_mutex);
      readers_stop = true;
    }
    rq_cv.notify_all();
    for (auto& r : readers) r.join();
    {
      std::lock_guard lk(ck_mutex);
      ck_stop = true;
    }
    ck_cv.notify_all();
    if (checkpointer.joinable()) checkpointer.join();
  }

  std::chrono::seconds sweep_interval() const {
    return std::clamp<std::chrono::seconds>(cfg.max_age / 10, std::chrono::seconds(1),
                                            std::chrono::seconds(60));
  }

  // Copies every message of the Mailpit tables into ours, in one transaction with the
  // marker that it was done.
  void import_mailpit() {
    wdb.exec("BEGIN IMMEDIATE");
    std::int64_t n = 0;
    read_mailpit(wdb, mailpit_prefix(cfg.tenant_id), [&](mailpit_message&& m) {
      row_data r;
      auto rec = std::make_shared<stored_message>();
      const bool id_fits = !m.id.empty() && m.id.size() <= id_length &&
                           std::all_of(m.id.begin(), m.id.end(), [](char c) {
                             return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                                    (c >= 'A' && c <= 'Z');
                           });
      // Mailpit's IDs since 1.13 are 22-character short UUIDs; older 36-character UUIDs
      // do not fit an inlet ID and get a new one.
      rec->id = id_fits ? message_id(m.id) : make_message_id();
      rec->created = m.created;
      rec->size = m.raw.size();
      if (cfg.summarize) {
        cfg.summarize(m.raw, rec->summary);
      } else {
        rec->summary = std::move(m.from_columns);
        rec->summary.totals.attachments = m.attachments;
      }
      // Mailpit keeps no envelope: the header recipients stand for it (mailboxes).
      const auto& sm = rec->summary;
      for (auto list : {std::span<const address>(sm.to.data(), sm.to.size()),
                        std::span<const address>(sm.cc), std::span<const address>(sm.bcc)})
        for (const auto& a : list)
          if (!a.address.empty()) rec->envelope.rcpt_to.push_back(a.address);
      rec->envelope.mail_from = rec->summary.from.address;
      rec->raw = std::move(m.raw);
      // From the raw bytes as for any message when the summary is; else Mailpit's words.
      r.search_text =
          cfg.summarize && !rec->raw.empty()
              ? search::search_text_of(rec->summary, rec->raw)
              : search::build_search_text(rec->summary, search::fold_case(m.search_text),
                                          search::search_text_bytes);
      r.read = m.read;
      r.tags = std::move(m.tags);
      if (!m.zstd_frame.empty() && cfg.compression > 0) {
        r.codec = static_cast<int>(raw_codec::zstd);  // Mailpit's frame, stored as it is
        r.compressed = std::move(m.zstd_frame);
      }
      r.rec = std::move(rec);
      prepare(r, cfg.compression);
      insert_row(r);
      ++n;
    });
    wdb.exec("INSERT INTO " + t.meta + "(key, value) VALUES('mailpit_imported', '" +
             std::to_string(n) + "')");
    wdb.exec("COMMIT");
  }

  void load_state() {
    tx.messages = wdb.query_int("SELECT count(*) FROM " + t.messages);
    tx.unread = wdb.query_int("SELECT count(*) FROM " + t.messages + " WHERE read=0");
    tx.bytes = wdb.query_int("SELECT total(size) FROM " + t.messages);
    reload_tags();
  }

  void reload_tags() {
    tags.clear();
    statement st(wdb, "SELECT tags FROM " + t.messages + " WHERE tags<>'' ORDER BY seq");
    while (st.step()) count_tags(split_lines(st.bytes(0)), true);
    tags_dirty = true;
  }

  void count_tags(const std::vector<std::string>& list, bool add) {
    for (const auto& tag : list) {
      auto key = search::fold_case(tag);
      auto it = tags.find(key);
      if (add) {
        if (it == tags.end()) it = tags.emplace(std::move(key), tag_info{tag, 0}).first;
        ++it->second.count;
      } else if (it != tags.end() && --it->second.count == 0) {
        tags.erase(it);
      }
    }
    tags_dirty = true;
  }

  std::vector<std::string> canonical(std::vector<std::string> list) const {
    for (auto& tag : list) {
      auto it = tags.find(search::fold_case(tag));
      if (it != tags.end()) tag = it->second.name;
    }
    return list;
  }

  void publish() {
    std::lock_guard lk(pub_mutex);
    committed = tx;
    if (tags_dirty) {
      tag_names.clear();
      for (const auto& [k, v] : tags) tag_names.push_back(v.name);
      tags_dirty = false;
    }
  }

  // ---------------------------------------------------------------- events

  bool has_observers() const noexcept {
    return observer_count.load(std::memory_order_relaxed) != 0;
  }
  void notify(const store_event& e) const {
    std::vector<std::shared_ptr<const event_observer>> obs;
    {
      std::lock_guard lk(observers_mutex);
      for (auto& [h, o] : observers) obs.push_back(o);
    }
    for (auto& o : obs) (*o)(e);
  }
  void notify_deleted(const std::vector<std::string>& ids, bool cleared) const {
    if (!has_observers() || ids.empty()) return;
    store_event ev;
    if (cleared || ids.size() > max_event_ids) {
      ev.what = store_event::kind::cleared;
    } else {
      ev.what = store_event::kind::deleted;
      ev.ids = ids;
    }
    notify(ev);
  }

  // ---------------------------------------------------------------- rows

  // A listing row (row_columns from column `c`) as a message without its raw bytes.
  static std::shared_ptr<stored_message> row_to_message(const statement& st, int c = 0) {
    auto m = std::make_shared<stored_message>();
    m->seq = static_cast<std::uint64_t>(st.int64(c));
    m->id = message_id(st.bytes(c + 1).substr(0, id_length));
    m->created = from_ns(st.int64(c + 2));
    m->size = static_cast<std::size_t>(st.int64(c + 3));
    m->init_read(st.int64(c + 4) != 0);
    if (auto tg = st.bytes(c + 5); !tg.empty())
      m->set_tags(std::make_shared<const std::vector<std::string>>(split_lines(tg)));
    if (!decode_meta(st.bytes(c + 6), m->envelope, m->summary))
      throw sqlite_error(SQLITE_CORRUPT, "message " + m->id.str() + ": damaged summary");
    m->has_raw = false;
    return m;
  }

  std::shared_ptr<stored_message> load_message(connection& c, std::int64_t seq) {
    statement st(c, std::string("SELECT ") + row_columns + " FROM " + t.messages +
                        " m WHERE m.seq=?");
    st.bind(1, seq);
    if (!st.step()) return nullptr;
    return row_to_message(st);
  }

  // The rows a selection names, oldest first (on the writer's connection).
  std::vector<row_ref> resolve(const selection& s, const std::string& extra_sql = {},
                               const std::vector<std::string>& extra_blobs = {}) {
    std::vector<row_ref> out;
    const std::string cols = "SELECT m.seq, m.id, m.read, m.tags, m.mailboxes, m.size FROM ";
    auto take = [&](statement& st) {
      while (st.step()) out.push_back(row_of(st));
    };
    if (s.what == selection::kind::ids) {
      statement st(wdb, cols + t.messages + " m WHERE m.id=?" +
                            (extra_sql.empty() ? "" : " AND " + extra_sql));
      std::unordered_set<std::string> seen;
      for (const auto& id : s.ids) {
        if (!seen.insert(id).second) continue;
        st.reset();
        st.bind_text(1, id);
        int i = 2;
        for (const auto& b : extra_blobs) st.bind_blob(i++, b);
        take(st);
      }
      std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
      return out;
    }
    const auto cond = compile(s.what == selection::kind::search ? s.query : search::query{});
    const auto box = normalize_mailbox(s.mailbox);
    std::string sql = cols + t.messages + " m";
    if (!box.empty()) sql += " JOIN " + t.mailboxes + " b ON b.seq=m.seq AND b.mailbox=?";
    sql += " WHERE " + cond.sql;
    if (!extra_sql.empty()) sql += " AND " + extra_sql;
    sql += " ORDER BY m.seq";
    statement st(wdb, sql);
    int i = 1;
    if (!box.empty()) st.bind_text(i++, box);
    i = cond.bind(st, i);
    for (const auto& b : extra_blobs) st.bind_blob(i++, b);
    take(st);
    return out;
  }

  // Deletes rows (writer, inside the transaction); returns their IDs.
  std::vector<std::string> delete_rows(const std::vector<row_ref>& rows) {
    std::vector<std::string> ids;
    if (rows.empty()) return ids;
    statement dm(wdb, "DELETE FROM " + t.messages + " WHERE seq=?");
    statement dr(wdb, "DELETE FROM " + t.raw + " WHERE seq=?");
    statement db(wdb, "DELETE FROM " + t.mailboxes + " WHERE mailbox=? AND seq=?");
    for (const auto& r : rows) {
      dm.reset().bind(1, r.seq).run();
      dr.reset().bind(1, r.seq).run();
      for (const auto& box : split_lines(r.mailboxes)) db.reset().bind_text(1, box).bind(2, r.seq).run();
      count_tags(split_lines(r.tags), false);
      --tx.messages;
      if (!r.read) --tx.unread;
      tx.bytes -= r.size;
      ids.push_back(r.id);
    }
    deleted_in_batch = true;
    return ids;
  }

  std::vector<row_ref> oldest(std::int64_t n) {
    statement st(wdb, "SELECT seq, id, read, tags, mailboxes, size FROM " + t.messages +
                          " ORDER BY seq LIMIT ?");
    st.bind(1, n);
    std::vector<row_ref> out;
    while (st.step()) out.push_back(row_of(st));
    return out;
  }

  // Replaces row r's tags with `next` (writer, in the transaction); false when unchanged.
  bool write_tags(const row_ref& r, const std::vector<std::string>& next, statement& up) {
    const auto cur = split_lines(r.tags);
    if (cur == next) return false;
    count_tags(cur, false);
    count_tags(next, true);
    up.reset().bind_text(1, join_lines(next)).bind_blob(2, folded_tags(next)).bind(3, r.seq).run();
    return true;
  }

  // ---------------------------------------------------------------- writer

  void enqueue(std::unique_ptr<job> j) {
    {
      std::lock_guard lk(wq_mutex);
      wq.push_back(std::move(j));
    }
    wq_cv.notify_one();
  }

  void writer_loop() {
    std::vector<std::unique_ptr<job>> batch;
    for (;;) {
      batch.clear();
      bool sweep = false;
      {
        std::unique_lock lk(wq_mutex);
        auto ready = [&] { return stopping || !wq.empty(); };
        if (cfg.max_age.count() > 0) {
          wq_cv.wait_until(lk, next_sweep, ready);
          if (std::chrono::steady_clock::now() >= next_sweep) {
            sweep = true;
            next_sweep = std::chrono::steady_clock::now() + sweep_interval();
          }
        } else {
          wq_cv.wait(lk, ready);
        }
        if (wq.empty() && stopping) return;
        if (!wq.empty() && cfg.max_batch_wait.count() > 0 && wq.size() < cfg.max_batch_messages &&
            !stopping) {
          wq_cv.wait_for(lk, cfg.max_batch_wait,
                         [&] { return stopping || wq.size() >= cfg.max_batch_messages; });
        }
        std::size_t bytes = 0;
        while (!wq.empty() && batch.size() < std::max<std::size_t>(1, cfg.max_batch_messages) &&
               (batch.empty() || bytes + wq.front()->bytes <= cfg.max_batch_bytes)) {
          bytes += wq.front()->bytes;
          batch.push_back(std::move(wq.front()));
          wq.pop_front();
        }
      }
      if (sweep) batch.push_back(make_expire_job(std::chrono::system_clock::now() - cfg.max_age, nullptr));
      if (!batch.empty()) run_batch(batch);
    }
  }

  void run_batch(std::vector<std::unique_ptr<job>>& batch) {
    const counts before = tx;
    std::vector<std::error_code> outcome(batch.size());
    deleted_in_batch = false;
    bool tag_failure = false;
    try {
      wdb.exec("BEGIN IMMEDIATE");
    } catch (const sqlite_error& e) {
      fail_all(batch, code_of(e), e.what());
      return;
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const counts saved = tx;
      try {
        wdb.exec("SAVEPOINT job");
        batch[i]->apply(*this);
        wdb.exec("RELEASE job");
      } catch (const sqlite_error& e) {
        outcome[i] = code_of(e);
        tx = saved;
        tag_failure = true;
        try {
          wdb.exec("ROLLBACK TO job");
          wdb.exec("RELEASE job");
        } catch (const sqlite_error&) {
        }
      } catch (const std::exception&) {
        outcome[i] = errc::invalid_argument;
        tx = saved;
        tag_failure = true;
        try {
          wdb.exec("ROLLBACK TO job");
          wdb.exec("RELEASE job");
        } catch (const sqlite_error&) {
        }
      }
    }
    try {
      if (tag_failure) reload_tags();
      if (deleted_in_batch && cfg.auto_vacuum &&
          wdb.query_int("PRAGMA freelist_count") > 4096)
        wdb.exec("PRAGMA incremental_vacuum(4096)");
      wdb.exec("COMMIT");
    } catch (const sqlite_error& e) {
      try {
        wdb.exec("ROLLBACK");
      } catch (const sqlite_error&) {
      }
      tx = before;
      try {
        reload_tags();
      } catch (const sqlite_error&) {
      }
      fail_all(batch, code_of(e), e.what());
      return;
    }
    broken.store(false);
    publish();
    n_batches.fetch_add(1, std::memory_order_relaxed);
    n_jobs.fetch_add(batch.size(), std::memory_order_relaxed);
    auto prev = max_jobs.load(std::memory_order_relaxed);
    while (prev < batch.size() && !max_jobs.compare_exchange_weak(prev, batch.size())) {
    }
    if (wal_file) {
      // Committed, not yet on disk: the syncer makes it durable, then tells the callers;
      // the writer goes on with the next batch meanwhile.
      {
        std::lock_guard lk(sq_mutex);
        sq.push_back({std::move(batch), std::move(outcome)});
      }
      sq_cv.notify_one();
      batch.clear();
      return;
    }
    finish(batch, outcome);
  }

  static void finish_jobs(impl& s, std::vector<std::unique_ptr<job>>& batch,
                          const std::vector<std::error_code>& outcome) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (outcome[i])
        batch[i]->failed(outcome[i]);
      else
        batch[i]->committed(s);
    }
  }
  void finish(std::vector<std::unique_ptr<job>>& batch, const std::vector<std::error_code>& outcome) {
    finish_jobs(*this, batch, outcome);
  }

  // ---------------------------------------------------------------- syncer
  // WAL mode: commits run with synchronous=NORMAL (no fsync inside COMMIT); this thread
  // fsyncs the WAL once for every batch committed since its last fsync, then completes
  // them in commit order. An fsync covers every write issued before it, commit records
  // included, so a batch is acknowledged only once all of it is on disk, as with FULL;
  // and the writer fills the next batch while the disk syncs the last one.
  struct synced_batch {
    std::vector<std::unique_ptr<job>> jobs;
    std::vector<std::error_code> outcome;
  };
  // The writer connection's WAL (its xSync runs on the syncer thread while the writer
  // appends: an fsync and a write of one file may run at once).
  sqlite3_file* wal_file = nullptr;
  std::mutex sq_mutex;
  std::condition_variable sq_cv;
  std::deque<synced_batch> sq;
  bool sq_stop = false;
  std::thread syncer;

  void sync_loop() {
    std::deque<synced_batch> todo;
    for (;;) {
      {
        std::unique_lock lk(sq_mutex);
        sq_cv.wait(lk, [&] { return sq_stop || !sq.empty(); });
        if (sq.empty()) return;  // stopping, and everything was told
        todo.swap(sq);
      }
      const int rc = wal_file->pMethods->xSync(wal_file, SQLITE_SYNC_NORMAL);
      const bool ok = rc == SQLITE_OK;
      n_syncs.fetch_add(1, std::memory_order_relaxed);
      if (!ok) {
        {
          std::lock_guard lk(pub_mutex);
          broken_detail = std::string("fsync of the WAL failed: ") + sqlite3_errstr(rc);
        }
        broken.store(true);
      }
      for (auto& b : todo) {
        if (!ok)
          for (auto& o : b.outcome) o = make_error_code(errc::unavailable);
        finish_jobs(*this, b.jobs, b.outcome);
      }
      todo.clear();
    }
  }

  void fail_all(std::vector<std::unique_ptr<job>>& batch, std::error_code ec, const char* why) {
    {
      std::lock_guard lk(pub_mutex);
      broken_detail = why;
    }
    broken.store(true);
    for (auto& j : batch) j->failed(ec);
  }

  // ---------------------------------------------------------------- jobs

  template <class Apply, class Done, class Fail>
  struct fn_job final : job {
    fn_job(Apply a, Done d, Fail f) : apply_(std::move(a)), done_(std::move(d)), fail_(std::move(f)) {}
    void apply(impl& s) override { apply_(s); }
    void committed(impl& s) override { done_(s); }
    void failed(std::error_code ec) override { fail_(ec); }
    Apply apply_;
    Done done_;
    Fail fail_;
  };
  template <class Apply, class Done, class Fail>
  static std::unique_ptr<job> make_job(Apply a, Done d, Fail f) {
    return std::make_unique<fn_job<Apply, Done, Fail>>(std::move(a), std::move(d), std::move(f));
  }

  std::unique_ptr<job> make_expire_job(time_point cutoff, std::function<void(std::size_t)> done) {
    auto ids = std::make_shared<std::vector<std::string>>();
    return make_job(
        [this, cutoff, ids](impl&) {
          auto rows = resolve(selection::everything(), "m.created<" + std::to_string(ns_of(cutoff)));
          *ids = delete_rows(rows);
        },
        [ids, done](impl& s) {
          s.deleted_total.fetch_add(ids->size(), std::memory_order_relaxed);
          s.notify_deleted(*ids, false);
          if (done) done(ids->size());
        },
        [done](std::error_code) {
          if (done) done(0);
        });
  }

  // A message made ready for its row: the CPU work done before the writer sees it.
  struct row_data {
    std::shared_ptr<stored_message> rec;
    std::vector<std::string> tags;
    std::vector<std::string> boxes;
    std::string meta, search_text, compressed;
    search::prepared_fields fields;
    int codec = 0;
    bool read = false;
  };

  // Fills rec's derived columns; rec->raw, summary and envelope are set, and
  // search_text holds the folded text.
  static void prepare(row_data& r, int compression) {
    r.fields = search::prepared_fields(*r.rec);
    r.meta = encode_meta(r.rec->envelope, r.rec->summary);
    r.boxes = mailboxes_of(r.rec->envelope.rcpt_to);
    if (compression > 0 && r.codec == 0) {
      r.compressed = compress(r.rec->raw, zstd_level(compression));
      r.codec = static_cast<int>(raw_codec::zstd);
    }
  }

  // Inserts one message (writer, in the transaction); sets rec->seq (and a new ID in the
  // 2^-128 case of a clash, or when `keep_id` is false and the given one is taken).
  void insert_row(row_data& r) {
    r.tags = canonical(distinct_tags(std::move(r.tags)));
    // Prepared once: the writer inserts thousands of rows a second.
    if (!ins_message)
      ins_message = statement(
          wdb, "INSERT INTO " + t.messages +
                   "(id, created, size, read, attachments, inline_parts, tags, tags_f,"
                   " mailboxes, meta, f_to, f_from, f_cc, f_bcc, f_reply_to, f_subject,"
                   " f_message_id, search_text) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!ins_raw) ins_raw = statement(wdb, "INSERT INTO " + t.raw + "(seq, codec, data) VALUES(?,?,?)");
    if (!ins_box)
      ins_box = statement(wdb, "INSERT OR IGNORE INTO " + t.mailboxes + "(mailbox, seq) VALUES(?,?)");
    auto& ins = ins_message;
    auto& rec = r.rec;
    for (int attempt = 0;; ++attempt) {
      ins.reset();
      ins.bind_text(1, rec->id.view());
      ins.bind(2, ns_of(rec->created));
      ins.bind(3, static_cast<std::int64_t>(rec->size));
      ins.bind(4, r.read ? 1 : 0);
      ins.bind(5, static_cast<std::int64_t>(rec->summary.attachments.size()));
      ins.bind(6, rec->summary.inline_parts);
      ins.bind_text(7, join_lines(r.tags));
      ins.bind_blob(8, folded_tags(r.tags));
      ins.bind_text(9, join_lines(r.boxes));
      ins.bind_blob(10, r.meta);
      using search::field;
      int i = 11;
      for (auto f : {field::to, field::from, field::cc, field::bcc, field::reply_to,
                     field::subject, field::message_id})
        ins.bind_blob(i++, r.fields.get(f));
      ins.bind_blob(18, r.search_text);
      try {
        ins.run();
        break;
      } catch (const sqlite_error& e) {
        // An ID drawn twice (2^-128), or an imported one taken: draw again.
        if (e.code() != SQLITE_CONSTRAINT_UNIQUE || attempt >= 3) throw;
        rec->id = make_message_id();
      }
    }
    rec->seq = static_cast<std::uint64_t>(sqlite3_last_insert_rowid(wdb.get()));
    rec->init_read(r.read);
    const auto seq = static_cast<std::int64_t>(rec->seq);
    ins_raw.reset().bind(1, seq).bind(2, r.codec).bind_blob(3, r.codec ? std::string_view(r.compressed)
                                                                    : std::string_view(rec->raw));
    ins_raw.run();
    for (const auto& b : r.boxes) ins_box.reset().bind_text(1, b).bind(2, seq).run();
    count_tags(r.tags, true);
    ++tx.messages;
    if (!r.read) ++tx.unread;
    tx.bytes += static_cast<std::int64_t>(rec->size);
  }

  struct put_job final : job {
    row_data row;
    put_handler done;
    std::vector<std::string> evicted;

    void apply(impl& s) override {
      s.insert_row(row);
      if (s.cfg.max_messages && s.tx.messages > static_cast<std::int64_t>(s.cfg.max_messages)) {
        auto victims = s.oldest(s.tx.messages - static_cast<std::int64_t>(s.cfg.max_messages));
        auto ids = s.delete_rows(victims);
        evicted.insert(evicted.end(), ids.begin(), ids.end());
      }
    }
    void committed(impl& s) override {
      auto& rec = row.rec;
      if (!row.tags.empty())
        rec->set_tags(std::make_shared<const std::vector<std::string>>(std::move(row.tags)));
      s.stored_total.fetch_add(1, std::memory_order_relaxed);
      s.evicted_total.fetch_add(evicted.size(), std::memory_order_relaxed);
      if (s.has_observers()) {
        s.notify_deleted(evicted, false);
        store_event ev;
        ev.what = store_event::kind::created;
        ev.message = rec;
        s.notify(ev);
      }
      if (done) done({}, std::move(rec));
    }
    void failed(std::error_code ec) override {
      if (done) done(ec, nullptr);
    }
  };

  // ---------------------------------------------------------------- readers

  void read(std::function<void(connection&)> fn) {
    {
      std::lock_guard lk(rq_mutex);
      rq.push_back(std::move(fn));
    }
    rq_cv.notify_one();
  }

  void reader_loop(connection& c) {
    for (;;) {
      std::function<void(connection&)> fn;
      {
        std::unique_lock lk(rq_mutex);
        rq_cv.wait(lk, [&] { return readers_stop || !rq.empty(); });
        if (rq.empty()) return;
        fn = std::move(rq.front());
        rq.pop_front();
      }
      fn(c);
    }
  }

  // A read transaction, so the counts and the page come from one snapshot.
  struct read_tx {
    connection& c;
    explicit read_tx(connection& conn) : c(conn) { c.cached("BEGIN")->run(); }
    ~read_tx() {
      try {
        c.cached("COMMIT")->run();
      } catch (const sqlite_error&) {
      }
    }
  };

  page list_on(connection& c, const list_request& req, std::error_code& ec) {
    page p;
    p.start = req.start;
    read_tx rt(c);
    const auto box = req.mailbox.empty() ? std::string() : normalize_mailbox(req.mailbox);
    const std::string from =
        t.messages + " m" +
        (box.empty() ? std::string() : " JOIN " + t.mailboxes + " b ON b.seq=m.seq AND b.mailbox=?1");
    // Counting the whole store reads the (read, seq) index, not the table's wide rows.
    const std::string count_from =
        box.empty() ? t.messages + " m INDEXED BY " + t.prefix + "inlet_messages_read" : from;
    {
      auto st = c.cached("SELECT count(*), coalesce(sum(m.read=0), 0) FROM " + count_from);
      if (!box.empty()) st->bind_text(1, box);
      st->step();
      p.total = static_cast<std::size_t>(st->int64(0));
      p.unread = static_cast<std::size_t>(st->int64(1));
    }
    std::int64_t before = std::numeric_limits<std::int64_t>::max();
    if (!req.before_id.empty()) {
      auto st = c.cached("SELECT seq FROM " + t.messages + " WHERE id=?");
      st->bind_text(1, req.before_id);
      if (!st->step()) {
        ec = errc::not_found;
        return p;
      }
      before = st->int64(0);
    }
    const auto cond = compile(req.query);
    const int first = box.empty() ? 1 : 2;
    const std::string where = " WHERE m.seq<?" + std::to_string(first) + " AND " + cond.sql;
    auto bind_all = [&](statement& st) {
      if (!box.empty()) st.bind_text(1, box);
      st.bind(first, before);
      return cond.bind(st, first + 1);
    };
    if (req.query.empty()) {
      if (req.before_id.empty()) {
        p.matched = p.total;
        p.matched_unread = p.unread;
      } else {
        auto st = c.cached("SELECT count(*), coalesce(sum(m.read=0), 0) FROM " + count_from + where);
        bind_all(*st);
        st->step();
        p.matched = static_cast<std::size_t>(st->int64(0));
        p.matched_unread = static_cast<std::size_t>(st->int64(1));
      }
      if (req.limit > 0 && req.start < p.matched) {
        auto st = c.cached(std::string("SELECT ") + row_columns + " FROM " + from + where +
                            " ORDER BY m.seq DESC LIMIT ? OFFSET ?");
        int i = bind_all(*st);
        st->bind(i, static_cast<std::int64_t>(req.limit));
        st->bind(i + 1, static_cast<std::int64_t>(req.start));
        while (st->step()) p.messages.push_back(row_to_message(*st));
      }
      return p;
    }
    // A search: one pass over the matches (newest first) counts them all and keeps the
    // page's sequence numbers; the page's rows are read after.
    std::vector<std::int64_t> page_seqs;
    {
      auto st = c.cached("SELECT m.seq, m.read FROM " + from + where + " ORDER BY m.seq DESC");
      bind_all(*st);
      while (st->step()) {
        if (p.matched >= req.start && page_seqs.size() < req.limit) page_seqs.push_back(st->int64(0));
        ++p.matched;
        p.matched_unread += st->int64(1) == 0;
      }
    }
    if (!page_seqs.empty()) {
      auto st = c.cached(std::string("SELECT ") + row_columns + " FROM " + t.messages + " m WHERE m.seq=?");
      for (auto s : page_seqs) {
        st->reset().bind(1, s);
        if (st->step()) p.messages.push_back(row_to_message(*st));
        st->reset();
      }
    }
    return p;
  }

  message_ptr get_on(connection& c, const std::string& id, std::error_code& ec) {
    read_tx rt(c);
    auto st = c.cached(std::string("SELECT ") + row_columns + ", r.codec, r.data FROM " + t.messages +
                        " m JOIN " + t.raw + " r ON r.seq=m.seq WHERE m.id=?");
    st->bind_text(1, id);
    if (!st->step()) {
      ec = errc::not_found;
      return nullptr;
    }
    auto m = row_to_message(*st);
    const auto codec = st->int64(7);
    const auto data = st->bytes(8);
    if (codec == static_cast<int>(raw_codec::none)) {
      m->raw.assign(data);
    } else if (codec != static_cast<int>(raw_codec::zstd) ||
               !decompress(data, m->raw, std::min(m->size, max_raw_bytes))) {
      throw sqlite_error(SQLITE_CORRUPT, "message " + id + ": raw bytes do not decode");
    }
    if (m->raw.size() != m->size)
      throw sqlite_error(SQLITE_CORRUPT, "message " + id + ": raw bytes of the wrong size");
    m->has_raw = true;
    return m;
  }
};

// ---------------------------------------------------------------- file_store

file_store::file_store(file_store_config cfg) : impl_(std::make_unique<impl>(std::move(cfg))) {}
file_store::~file_store() = default;

const file_store_config& file_store::config() const noexcept { return impl_->cfg; }

void file_store::put(new_message msg, put_handler done) {
  // The CPU work before the write (search text, folding, encoding, compression) runs
  // here, on the caller's thread, so the writer thread only writes.
  search::complete_search_text(msg);
  auto j = std::make_unique<impl::put_job>();
  auto& row = j->row;
  auto rec = std::make_shared<stored_message>();
  rec->id = make_message_id();
  rec->created = msg.created.value_or(std::chrono::system_clock::now());
  rec->envelope = std::move(msg.envelope);
  rec->summary = std::move(msg.summary);
  rec->size = msg.raw.size();
  rec->raw = std::move(msg.raw);
  rec->has_raw = true;
  row.search_text = std::move(rec->summary.search_text);
  rec->summary.search_text.clear();
  row.rec = std::move(rec);
  row.tags = std::move(msg.tags);
  impl::prepare(row, impl_->cfg.compression);
  j->bytes = (row.codec ? row.compressed.size() : row.rec->raw.size()) + row.meta.size() +
             row.search_text.size();
  j->done = std::move(done);
  impl_->enqueue(std::move(j));
}

void file_store::do_list(list_request req, handler<void(std::error_code, page)> h) {
  shared_handler<handler<void(std::error_code, page)>> out(std::move(h));
  impl_->read([this, req = std::move(req), out](connection& c) {
    std::error_code ec;
    page p;
    try {
      p = impl_->list_on(c, req, ec);
    } catch (const sqlite_error& e) {
      ec = code_of(e);
      p = page{};
    }
    out(ec, std::move(p));
  });
}

void file_store::do_get(std::string id, handler<void(std::error_code, message_ptr)> h) {
  shared_handler<handler<void(std::error_code, message_ptr)>> out(std::move(h));
  impl_->read([this, id = std::move(id), out](connection& c) {
    std::error_code ec;
    message_ptr m;
    try {
      m = impl_->get_on(c, id, ec);
    } catch (const sqlite_error& e) {
      ec = code_of(e);
      m = nullptr;
    }
    out(ec, std::move(m));
  });
}

void file_store::do_remove(selection which, handler<void(std::error_code, std::size_t)> h) {
  shared_handler<handler<void(std::error_code, std::size_t)>> out(std::move(h));
  auto ids = std::make_shared<std::vector<std::string>>();
  const bool all = which.what == selection::kind::all;
  impl_->enqueue(impl::make_job(
      [ids, which = std::move(which)](impl& s) { *ids = s.delete_rows(s.resolve(which)); },
      [ids, out, all](impl& s) {
        s.deleted_total.fetch_add(ids->size(), std::memory_order_relaxed);
        s.notify_deleted(*ids, all);
        out(std::error_code{}, ids->size());
      },
      [out](std::error_code ec) { out(ec, std::size_t{0}); }));
}

void file_store::do_set_read(selection which, bool read,
                             handler<void(std::error_code, std::size_t)> h) {
  shared_handler<handler<void(std::error_code, std::size_t)>> out(std::move(h));
  auto ids = std::make_shared<std::vector<std::string>>();
  impl_->enqueue(impl::make_job(
      [ids, read, which = std::move(which)](impl& s) {
        auto rows = s.resolve(which, read ? "m.read=0" : "m.read=1");
        statement up(s.wdb, "UPDATE " + s.t.messages + " SET read=? WHERE seq=?");
        for (const auto& r : rows) {
          up.reset().bind(1, read ? 1 : 0).bind(2, r.seq).run();
          ids->push_back(r.id);
        }
        s.tx.unread += read ? -static_cast<std::int64_t>(rows.size())
                            : static_cast<std::int64_t>(rows.size());
      },
      [ids, read, out](impl& s) {
        if (s.has_observers() && !ids->empty()) {
          store_event ev;
          ev.what = ids->size() > max_event_ids ? store_event::kind::cleared
                                                 : store_event::kind::read_changed;
          if (ids->size() <= max_event_ids) ev.ids = *ids;
          ev.read = read;
          s.notify(ev);
        }
        out(std::error_code{}, ids->size());
      },
      [out](std::error_code ec) { out(ec, std::size_t{0}); }));
}

// The changed messages, reloaded for tags_changed events (or a `cleared` past the cap).
struct tag_change {
  std::vector<std::int64_t> seqs;
  std::vector<message_ptr> messages;
  bool reload_all = false;
};

void file_store::do_set_tags(selection which, std::vector<std::string> wanted,
                             handler<void(std::error_code, std::size_t)> h) {
  shared_handler<handler<void(std::error_code, std::size_t)>> out(std::move(h));
  auto ch = std::make_shared<tag_change>();
  impl_->enqueue(impl::make_job(
      [ch, which = std::move(which), wanted = distinct_tags(std::move(wanted))](impl& s) {
        auto next = s.canonical(wanted);
        statement up(s.wdb, "UPDATE " + s.t.messages + " SET tags=?, tags_f=? WHERE seq=?");
        for (const auto& r : s.resolve(which))
          if (s.write_tags(r, next, up)) ch->seqs.push_back(r.seq);
        if (s.has_observers() && ch->seqs.size() <= max_event_ids)
          for (auto seq : ch->seqs)
            if (auto m = s.load_message(s.wdb, seq)) ch->messages.push_back(std::move(m));
      },
      [ch, out](impl& s) {
        if (s.has_observers() && !ch->seqs.empty()) {
          if (ch->seqs.size() > max_event_ids) {
            store_event ev;
            ev.what = store_event::kind::cleared;
            s.notify(ev);
          } else {
            for (const auto& m : ch->messages) {
              store_event ev;
              ev.what = store_event::kind::tags_changed;
              ev.message = m;
              s.notify(ev);
            }
          }
        }
        out(std::error_code{}, ch->seqs.size());
      },
      [out](std::error_code ec) { out(ec, std::size_t{0}); }));
}

void file_store::do_list_tags(handler<void(std::error_code, std::vector<std::string>)> h) {
  std::vector<std::string> names;
  {
    std::lock_guard lk(impl_->pub_mutex);
    names = impl_->tag_names;
  }
  complete(std::move(h), std::error_code{}, std::move(names));
}

void file_store::do_rename_tag(std::string from, std::string to,
                               handler<void(std::error_code, std::size_t)> h) {
  if (to.empty()) {
    complete(std::move(h), make_error_code(errc::invalid_argument), std::size_t{0});
    return;
  }
  shared_handler<handler<void(std::error_code, std::size_t)>> out(std::move(h));
  auto n = std::make_shared<std::size_t>(0);
  impl_->enqueue(impl::make_job(
      [n, from = std::move(from), to = std::move(to)](impl& s) {
        const auto from_key = search::fold_case(from);
        const auto to_key = search::fold_case(to);
        if (!s.tags.contains(from_key)) return;
        // The new spelling wins everywhere, also on messages that carried `to` already.
        auto rows = s.resolve(selection::everything(),
                              "(inlet_contains(m.tags_f, ?) OR inlet_contains(m.tags_f, ?))",
                              {"\n" + from_key + "\n", "\n" + to_key + "\n"});
        if (auto it = s.tags.find(to_key); it != s.tags.end()) it->second.name = to;
        statement up(s.wdb, "UPDATE " + s.t.messages + " SET tags=?, tags_f=? WHERE seq=?");
        for (const auto& r : rows) {
          std::vector<std::string> next;
          bool placed = false;
          for (const auto& tag : split_lines(r.tags)) {
            auto k = search::fold_case(tag);
            if (k == from_key || k == to_key) {
              if (!placed) next.push_back(to);
              placed = true;
            } else {
              next.push_back(tag);
            }
          }
          if (s.write_tags(r, next, up)) ++*n;
        }
        s.tags_dirty = true;
      },
      [n, out](impl& s) {
        if (s.has_observers() && *n) {
          store_event ev;
          ev.what = store_event::kind::cleared;
          s.notify(ev);
        }
        out(std::error_code{}, *n);
      },
      [out](std::error_code ec) { out(ec, std::size_t{0}); }));
}

void file_store::do_delete_tag(std::string tag, handler<void(std::error_code, std::size_t)> h) {
  shared_handler<handler<void(std::error_code, std::size_t)>> out(std::move(h));
  auto n = std::make_shared<std::size_t>(0);
  impl_->enqueue(impl::make_job(
      [n, tag = std::move(tag)](impl& s) {
        const auto key = search::fold_case(tag);
        if (!s.tags.contains(key)) return;
        auto rows = s.resolve(selection::everything(), "inlet_contains(m.tags_f, ?)", {"\n" + key + "\n"});
        statement up(s.wdb, "UPDATE " + s.t.messages + " SET tags=?, tags_f=? WHERE seq=?");
        for (const auto& r : rows) {
          std::vector<std::string> next;
          for (const auto& t : split_lines(r.tags))
            if (search::fold_case(t) != key) next.push_back(t);
          if (s.write_tags(r, next, up)) ++*n;
        }
      },
      [n, out](impl& s) {
        if (s.has_observers() && *n) {
          store_event ev;
          ev.what = store_event::kind::cleared;
          s.notify(ev);
        }
        out(std::error_code{}, *n);
      },
      [out](std::error_code ec) { out(ec, std::size_t{0}); }));
}

std::size_t file_store::expire(time_point cutoff) {
  std::mutex m;
  std::condition_variable cv;
  std::optional<std::size_t> result;
  impl_->enqueue(impl_->make_expire_job(cutoff, [&](std::size_t n) {
    std::lock_guard lk(m);
    result = n;
    cv.notify_all();
  }));
  std::unique_lock lk(m);
  cv.wait(lk, [&] { return result.has_value(); });
  return *result;
}

store_stats file_store::stats() const {
  store_stats s;
  {
    std::lock_guard lk(impl_->pub_mutex);
    s.messages = static_cast<std::uint64_t>(impl_->committed.messages);
    s.unread = static_cast<std::uint64_t>(impl_->committed.unread);
    s.bytes = static_cast<std::uint64_t>(impl_->committed.bytes);
  }
  s.stored_total = impl_->stored_total.load(std::memory_order_relaxed);
  s.evicted_total = impl_->evicted_total.load(std::memory_order_relaxed);
  s.deleted_total = impl_->deleted_total.load(std::memory_order_relaxed);
  s.rejected_total = impl_->rejected_total.load(std::memory_order_relaxed);
  return s;
}

store_health file_store::health() const {
  store_health h;
  if (impl_->broken.load()) {
    std::lock_guard lk(impl_->pub_mutex);
    h.ready = false;
    h.detail = "file store " + impl_->cfg.path + ": last commit failed: " + impl_->broken_detail;
  } else {
    h.detail = "file store " + impl_->cfg.path;
  }
  return h;
}

namespace {

// The raw bytes of a row (codec, data), or false when they do not decode to `size` bytes
// (size < 0: any size up to the bound).
bool decode_raw(std::int64_t codec, std::string_view data, std::int64_t size, std::string& out) {
  if (codec == static_cast<int>(raw_codec::none)) {
    out.assign(data);
  } else if (codec != static_cast<int>(raw_codec::zstd) ||
             !decompress(data, out, size >= 0 ? std::min<std::size_t>(static_cast<std::size_t>(size), max_raw_bytes)
                                              : max_raw_bytes)) {
    return false;
  }
  return size < 0 || out.size() == static_cast<std::size_t>(size);
}

}  // namespace

file_store::reindex_result file_store::reindex(const reindex_options& opt) {
  if (!opt.summarize) throw std::invalid_argument("reindex needs a summarize function");
  auto& s = *impl_;
  // The rows are read here, on the caller's thread, with a connection of its own; the
  // MIME parse and the folding run here too, and only the UPDATEs go through the writer,
  // one transaction per batch, so a running server's puts wait at most one batch.
  connection rc = open_reader(s.cfg);
  statement sel(rc, "SELECT m.seq, m.size, m.meta, m.mailboxes, m.tags, r.codec, r.data FROM " +
                        s.t.messages + " m JOIN " + s.t.raw +
                        " r ON r.seq=m.seq WHERE m.seq>? ORDER BY m.seq LIMIT ?");
  struct update {
    std::int64_t seq = 0, old_size = 0, size = 0;
    std::string meta, search_text, tags_f;
    search::prepared_fields fields;
    std::int64_t attachments = 0, inline_parts = 0;
  };
  reindex_result out;
  const auto batch = static_cast<std::int64_t>(std::max<std::size_t>(1, opt.batch_messages));
  std::int64_t last = 0;
  for (;;) {
    auto ups = std::make_shared<std::vector<update>>();
    bool more = false;
    try {
      rc.exec("BEGIN");
      sel.reset().bind(1, last).bind(2, batch);
      std::int64_t rows = 0;
      while (sel.step()) {
        ++rows;
        last = sel.int64(0);
        stored_message m;
        if (!decode_raw(sel.int64(5), sel.bytes(6), -1, m.raw)) {
          ++out.failed;
          continue;
        }
        summary old;
        const bool meta_ok = decode_meta(sel.bytes(2), m.envelope, old);
        if (!meta_ok) {
          m.envelope = envelope{};
          for (auto& box : split_lines(sel.bytes(3))) m.envelope.rcpt_to.push_back(std::move(box));
        }
        opt.summarize(m.raw, m.envelope, m.summary);
        if (!meta_ok) m.envelope.mail_from = m.summary.from.address;
        update u;
        u.seq = last;
        u.old_size = sel.int64(1);
        u.size = static_cast<std::int64_t>(m.raw.size());
        u.search_text = search::search_text_of(m.summary, m.raw);
        m.summary.search_text.clear();
        u.fields = search::prepared_fields(m);
        u.meta = encode_meta(m.envelope, m.summary);
        u.attachments = static_cast<std::int64_t>(m.summary.attachments.size());
        u.inline_parts = m.summary.inline_parts;
        u.tags_f = folded_tags(split_lines(sel.bytes(4)));
        ups->push_back(std::move(u));
      }
      sel.reset();
      rc.exec("COMMIT");
      more = rows == batch;
    } catch (const sqlite_error& e) {
      throw file_store_error(code_of(e), s.cfg.path + ": reindex: " + e.what());
    }
    if (!ups->empty()) {
      std::mutex mu;
      std::condition_variable cv;
      std::optional<std::error_code> result;
      auto tell = [&](std::error_code ec) {
        std::lock_guard lk(mu);
        result = ec;
        cv.notify_all();
      };
      s.enqueue(impl::make_job(
          [ups](impl& w) {
            statement up(w.wdb, "UPDATE " + w.t.messages +
                                    " SET size=?, attachments=?, inline_parts=?, meta=?, tags_f=?,"
                                    " f_to=?, f_from=?, f_cc=?, f_bcc=?, f_reply_to=?, f_subject=?,"
                                    " f_message_id=?, search_text=? WHERE seq=?");
            for (const auto& u : *ups) {
              up.reset().bind(1, u.size).bind(2, u.attachments).bind(3, u.inline_parts);
              up.bind_blob(4, u.meta).bind_blob(5, u.tags_f);
              using search::field;
              int i = 6;
              for (auto f : {field::to, field::from, field::cc, field::bcc, field::reply_to,
                             field::subject, field::message_id})
                up.bind_blob(i++, u.fields.get(f));
              up.bind_blob(13, u.search_text).bind(14, u.seq);
              up.run();
              if (w.wdb.changes() > 0) w.tx.bytes += u.size - u.old_size;  // gone meanwhile: 0
            }
          },
          [&tell](impl&) { tell({}); }, [&tell](std::error_code ec) { tell(ec); }));
      std::unique_lock lk(mu);
      cv.wait(lk, [&] { return result.has_value(); });
      if (*result)
        throw file_store_error(*result, s.cfg.path + ": reindex: a batch failed to commit: " +
                                            result->message());
      out.reindexed += ups->size();
      if (opt.progress) opt.progress(out.reindexed);
    }
    if (!more) break;
  }
  return out;
}

void read_raw_messages(const file_store_config& cfg,
                       const std::function<void(std::string_view, std::string_view)>& each) {
  const table_names t(cfg.tenant_id);
  auto refuse = [&](errc code, const std::string& why) {
    throw file_store_error(make_error_code(code), cfg.path + ": " + why);
  };
  if (::access(cfg.path.c_str(), R_OK) != 0)
    refuse(errc::unavailable, std::string("cannot read: ") + std::strerror(errno));
  try {
    connection c(cfg.path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX);
    sqlite3_busy_timeout(c.get(), 10'000);
    if (c.query_int("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='" +
                    t.messages + "'") > 0) {
      c.exec("BEGIN");  // one snapshot, also while a server writes
      statement st(c, "SELECT m.id, m.size, r.codec, r.data FROM " + t.messages + " m JOIN " +
                          t.raw + " r ON r.seq=m.seq ORDER BY m.seq");
      std::string raw;
      while (st.step()) {
        const std::string id(st.bytes(0));
        if (!decode_raw(st.int64(2), st.bytes(3), st.int64(1), raw))
          throw sqlite_error(SQLITE_CORRUPT, "message " + id + ": raw bytes do not decode");
        each(id, raw);
      }
      c.exec("COMMIT");
      return;
    }
    const auto prefix = mailpit_prefix(cfg.tenant_id);
    if (!has_mailpit_tables(c, prefix))
      refuse(errc::foreign_file, "holds no messages of inlet or Mailpit" +
                                     (cfg.tenant_id.empty() ? std::string()
                                                            : " for tenant " + cfg.tenant_id));
    read_mailpit(c, prefix, [&](mailpit_message&& m) { each(m.id, m.raw); });
  } catch (const sqlite_error& e) {
    refuse(e.primary() == SQLITE_NOTADB    ? errc::foreign_file
           : e.primary() == SQLITE_CORRUPT ? errc::corrupt
                                           : errc::unavailable,
           e.what());
  }
}

file_store::batch_stats file_store::batches() const {
  return {impl_->n_batches.load(), impl_->n_jobs.load(), impl_->max_jobs.load(),
          impl_->n_syncs.load()};
}

std::uint64_t file_store::subscribe(event_observer observer) {
  std::lock_guard lk(impl_->observers_mutex);
  auto h = impl_->next_observer++;
  impl_->observers.emplace(h, std::make_shared<const event_observer>(std::move(observer)));
  impl_->observer_count.store(impl_->observers.size(), std::memory_order_relaxed);
  return h;
}

void file_store::unsubscribe(std::uint64_t handle) {
  std::lock_guard lk(impl_->observers_mutex);
  impl_->observers.erase(handle);
  impl_->observer_count.store(impl_->observers.size(), std::memory_order_relaxed);
}

}  // namespace inlet::store
