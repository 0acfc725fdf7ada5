#include "inlet/mail/ingest.hpp"

#include <algorithm>
#include <cstdio>
#include <inlet/store/search.hpp>
#include <inlet/store/tags.hpp>
#include <inlet/mime/segment.hpp>
#include <optional>
#include <utility>

#include "inlet/mail/content_filter.hpp"
#include "inlet/mail/streaming_parse.hpp"
#include "inlet/mail/summary.hpp"
#include "inlet/mail/worker_pool.hpp"

namespace inlet::mail {

namespace sm = inlet::smtp;
namespace st = inlet::store;

namespace {

// The store keeps one flat copy of the body: the only copy on the receive path.
std::string flatten(const inlet::buffer::segment& body) {
  std::string raw;
  raw.reserve(body.size());
  for (std::string_view piece : body.spans()) raw.append(piece);
  return raw;
}

// One put between the store's call and its answer: the pipeline and the SMTP answer.
// The put callback holds only a pointer to it, which std::function keeps inline, so a
// message costs no callback allocation once the thread's free list is warm. The store
// runs the callback exactly once (store.hpp); the callback gives the slot back to the
// list of the thread it runs on (PostgreSQL: a store thread), bounded, the rest freed.
struct put_slot {
  ingest* self = nullptr;
  sm::delivery_callback done;
  put_slot* next = nullptr;
};

class put_slot_list {
 public:
  put_slot_list() = default;
  put_slot_list(const put_slot_list&) = delete;
  put_slot_list& operator=(const put_slot_list&) = delete;
  ~put_slot_list() {
    while (head_) delete std::exchange(head_, head_->next);
  }
  put_slot* take() {
    if (!head_) return new put_slot;
    --size_;
    return std::exchange(head_, head_->next);
  }
  void give(put_slot* s) {
    if (size_ == max_kept) {
      delete s;
      return;
    }
    s->next = std::exchange(head_, s);
    ++size_;
  }

 private:
  static constexpr std::size_t max_kept = 64;
  put_slot* head_ = nullptr;
  std::size_t size_ = 0;
};

thread_local put_slot_list put_slots;

}  // namespace

ingest::ingest(st::store* store, content_filter* filter, ingest_options opts)
    : store_(store), filter_(filter), opts_(std::move(opts)) {
  if (opts_.heavy_bytes > 0) heavy_ = std::make_unique<worker_pool>();
}

ingest::~ingest() = default;

void to_store_envelope(sm::envelope& e, st::envelope& out) {
  out.helo = std::move(e.helo);
  out.mail_from = std::move(e.mail_from);
  out.rcpt_to = std::move(e.rcpt_to);
  out.remote = e.remote_address.find(':') != std::string::npos
                   ? "[" + e.remote_address + "]:" + std::to_string(e.remote_port)
                   : e.remote_address + ":" + std::to_string(e.remote_port);
  std::string proto(sm::to_string(e.proto));
  for (auto& c : proto) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (e.tls && proto != "LMTP") proto += "S";
  if (!e.auth_user.empty()) proto += "A";  // RFC 3848: ESMTPA, ESMTPSA
  out.protocol = std::move(proto);
  out.auth_user = e.auth_user;
}

void ingest::summarize(const inlet::mime::parsed_message& parse, st::new_message& msg,
                       inlet::filter::scan* scan) const {
  analyze(parse, msg.envelope.rcpt_to, msg.summary, scan);
  if (opts_.tags.x_tags || opts_.tags.plus_addresses)
    message_tags(parse, msg.summary, opts_.tags, msg.tags);
  if (opts_.tag_auth_user && !msg.envelope.auth_user.empty()) {
    std::string t = st::clean_tag(msg.envelope.auth_user);
    if (!t.empty()) msg.tags.push_back(std::move(t));
  }
  if (opts_.use_message_dates && msg.summary.date) msg.created = msg.summary.date;
}

void ingest::log_stored(const st::stored_message& m) const {
  if (!opts_.log_stored) return;
  std::printf("inletd: stored %.*s from <%s> to %zu recipient(s), %zu bytes\n",
              static_cast<int>(m.id.size()), m.id.data(), m.envelope.mail_from.c_str(),
              m.envelope.rcpt_to.size(), m.size);
  std::fflush(stdout);
}

ingest::verdict ingest::judge(st::new_message& msg, std::optional<inlet::filter::scan>& scan) {
  if (scan) {
    inlet::filter::verdict v = scan->finish(filter_->threshold());
    if (v.over_threshold) {
      if (filter_->reject()) {
        counters_.filter_rejected.fetch_add(1, std::memory_order_relaxed);
        return verdict::reject;
      }
      counters_.filter_tagged.fetch_add(1, std::memory_order_relaxed);
      msg.tags.push_back("spam");
    }
  }
  opts_.rules.apply(msg, msg.tags);
  return verdict::keep;
}

namespace {

// Every CR CR LF of `raw` as CR LF.
void drop_cr_before_crlf(std::string& raw) {
  std::size_t out = 0;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r' && i + 2 < raw.size() && raw[i + 1] == '\r' && raw[i + 2] == '\n')
      continue;
    raw[out++] = raw[i];
  }
  raw.resize(out);
}

}  // namespace

void ingest::deliver(sm::received_message&& m, sm::delivery_callback done) {
  // A large message is parsed (or, streamed, analyzed) off the I/O thread; its reply
  // waits for the worker. A streamed parse goes with the message: it views the body's
  // fragments, which move with it.
  if (heavy_ && m.body.size() >= opts_.heavy_bytes) {
    heavy_->post([this, m = std::move(m), done = std::move(done)]() mutable {
      deliver_now(std::move(m), std::move(done));
    });
    return;
  }
  deliver_now(std::move(m), std::move(done));
}

void ingest::deliver_now(sm::received_message&& m, sm::delivery_callback done) {
  counters_.received.fetch_add(1, std::memory_order_relaxed);
  counters_.bytes.fetch_add(m.body.size(), std::memory_order_relaxed);

  std::optional<inlet::filter::scan> scan;
  if (filter_) scan.emplace(filter_->registry().make_scan());
  inlet::filter::scan* scan_ptr = scan ? &*scan : nullptr;

  st::new_message msg;  // no search text: the store derives it from the raw bytes
  // --parse streaming: the driver parsed the body while it arrived; that parse views the
  // body's fragments, so it is summarized before the body is flattened and dropped.
  const inlet::mime::parsed_message* streamed = streamed_parse(m);
  if (store_) {
    to_store_envelope(m.envelope, msg.envelope);  // m's is not read again
    bool bare_cr = false;
    if (streamed) {
      summarize(*streamed, msg, scan_ptr);
      bare_cr = streamed->cr_cr_lf_in_header();
      m.observer.reset();  // the parser back to the pool before its pieces go
      msg.raw = flatten(m.body);
      m.body.clear();  // give the connection's fragments back now
    } else {
      msg.raw = flatten(m.body);
      m.body.clear();  // give the connection's fragments back now
      const auto& parse = thread_parser().parse(msg.raw);
      bare_cr = parse.cr_cr_lf_in_header();  // noticed by the parser, no scan
      if (!bare_cr) summarize(parse, msg, scan_ptr);
    }
    if (bare_cr) {  // rare: Mailpit's strict refusal, or its normalisation and a new parse
      if (opts_.strict_rfc_headers) {
        counters_.store_errors.fetch_add(1, std::memory_order_relaxed);
        done({sm::delivery_status::rejected(451, "4.3.5", "Unable to process mail"), {}});
        return;
      }
      drop_cr_before_crlf(msg.raw);
      msg.summary = {};
      msg.tags.clear();
      if (filter_) scan.emplace(filter_->registry().make_scan());
      summarize(thread_parser().parse(msg.raw), msg, scan ? &*scan : nullptr);
    }
  } else {
    // sink: parse the received fragments in place (or take the streamed parse), never
    // copy the body. The summary is made (the same work as with a store) and dropped.
    analyze(streamed ? *streamed : inlet::mime::parse(thread_parser(), m.body),
            m.envelope.rcpt_to, msg.summary, scan_ptr);
    m.observer.reset();
  }

  if (judge(msg, scan) == verdict::reject) {
    done({sm::delivery_status::rejected(550, "5.7.1", "Message rejected by content filter"), {}});
    return;
  }
  if (!store_) {  // sink: parsed and filtered, now dropped
    counters_.stored.fetch_add(1, std::memory_order_relaxed);
    done({sm::delivery_status::accepted(st::make_message_id()), {}});
    return;
  }
  if (opts_.ignore_duplicate_ids && !msg.summary.message_id.empty() &&
      msg.summary.message_id.find('"') == std::string::npos) {
    // Mailpit's --ignore-duplicate-ids: a Message-ID the store holds is answered and dropped.
    st::list_request lr(0, 0);
    if (!st::search::parse("message-id:\"" + msg.summary.message_id + "\"", {}, lr.query)) {
      store_->async_list(std::move(lr), [this, msg = std::move(msg), done = std::move(done)](
                                            std::error_code ec, st::page p) mutable {
        if (!ec && p.matched > 0) {
          counters_.duplicates_ignored.fetch_add(1, std::memory_order_relaxed);
          auto ok = sm::delivery_status::accepted({});
          ok.text = "Ok: queued";
          done({ok, {}});
          return;
        }
        store_message(std::move(msg), std::move(done));
      });
      return;
    }
  }
  store_message(std::move(msg), std::move(done));
}

void ingest::store_message(st::new_message&& msg, sm::delivery_callback done) {
  put_slot* slot = put_slots.take();
  slot->self = this;
  slot->done = std::move(done);
  store_->put(std::move(msg), [slot](std::error_code ec, st::message_ptr stored) {
    ingest* self = slot->self;
    sm::delivery_callback done = std::move(slot->done);
    slot->done = nullptr;
    put_slots.give(slot);
    if (ec || !stored) {
      self->counters_.store_errors.fetch_add(1, std::memory_order_relaxed);
      if (ec == st::errc::too_large)
        done({sm::delivery_status::rejected(552, "5.3.4", "Message too big for the store"), {}});
      else
        done({sm::delivery_status::rejected(451, "4.3.0", "Store unavailable, try again later"),
              {}});
      return;
    }
    self->counters_.stored.fetch_add(1, std::memory_order_relaxed);
    self->log_stored(*stored);
    done({sm::delivery_status::accepted(stored->id), {}});
    if (self->opts_.on_stored) self->opts_.on_stored(stored);
  });
}

void ingest::submit(submission in, submit_callback done) {
  if (!store_) {
    done(make_error_code(st::errc::unavailable), {});
    return;
  }
  counters_.received.fetch_add(1, std::memory_order_relaxed);
  counters_.bytes.fetch_add(in.raw.size(), std::memory_order_relaxed);
  std::optional<inlet::filter::scan> scan;
  if (filter_) scan.emplace(filter_->registry().make_scan());
  st::new_message msg;
  msg.envelope = std::move(in.envelope);
  msg.raw = std::move(in.raw);
  msg.tags = std::move(in.tags);
  summarize(thread_parser().parse(msg.raw), msg, scan ? &*scan : nullptr);
  if (judge(msg, scan) == verdict::reject) {
    done(make_error_code(st::errc::invalid_argument), {});
    return;
  }
  store_->put(std::move(msg),
              [this, done = std::move(done)](std::error_code ec, st::message_ptr stored) {
                if (ec || !stored) {
                  counters_.store_errors.fetch_add(1, std::memory_order_relaxed);
                  done(ec ? ec : make_error_code(st::errc::unavailable), {});
                  return;
                }
                counters_.stored.fetch_add(1, std::memory_order_relaxed);
                log_stored(*stored);
                done({}, stored->id);
                if (opts_.on_stored) opts_.on_stored(stored);
              });
}

void ingest::append_metrics(std::string& out) const {
  auto line = [&out](const char* name, const char* type, const char* help, double value) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
    out += name;
    out += ' ';
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g\n", value);
    out += buf;
  };
  const auto& c = counters_;
  content_filter* f = filter_;
  auto get = [](const std::atomic<std::uint64_t>& a) {
    return static_cast<double>(a.load(std::memory_order_relaxed));
  };
  line("inlet_messages_received_total", "counter", "Messages whose data was complete.",
       get(c.received));
  line("inlet_messages_accepted_total", "counter", "Messages answered 250 (stored, or sunk).",
       get(c.stored));
  line("inlet_message_bytes_total", "counter", "Bytes of messages received.", get(c.bytes));
  line("inlet_store_errors_total", "counter", "Messages the store refused.", get(c.store_errors));
  line("inlet_filter_tagged_total", "counter", "Messages tagged spam by the filter.",
       get(c.filter_tagged));
  line("inlet_filter_rejected_total", "counter", "Messages rejected by the filter.",
       get(c.filter_rejected));
  line("inlet_messages_duplicate_ignored_total", "counter",
       "Messages answered and dropped for a Message-ID the store holds.",
       get(c.duplicates_ignored));
  if (f) {
    auto s = f->registry().stats().load();
    line("inlet_filter_messages_scanned_total", "counter", "Messages scanned.",
         double(s.messages_scanned));
    line("inlet_filter_messages_matched_total", "counter", "Messages with a match.",
         double(s.messages_matched));
    line("inlet_filter_bytes_scanned_total", "counter", "Decoded bytes scanned.",
         double(s.bytes_scanned));
    line("inlet_filter_seconds_total", "counter", "Time spent in the engine.",
         double(s.nanoseconds) / 1e9);
  }
}

}  // namespace inlet::mail
