// The listener: one dedicated connection on the listener's strand, a set of channels, a
// bounded queue of notifications, at most one waiting receiver. State machine (DESIGN.md,
// "LISTEN/NOTIFY"): idle -> connecting -> subscribing -> ready; a lost connection goes to
// backoff -> connecting; close() from anywhere ends it.
#include "inlet/pg/listener.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <random>
#include <set>
#include <vector>

namespace inlet::pg {
namespace detail {

void set_listener_hooks(const conn_ptr& c, std::function<void(const PGnotify&)> on_notify,
                        std::function<void(std::error_code)> on_lost);

namespace {
std::string quote_ident(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q.push_back('"');
    q.push_back(c);
  }
  q.push_back('"');
  return q;
}
std::unique_ptr<diagnostics> client_diag(const std::string& msg) {
  auto d = std::make_unique<diagnostics>();
  d->client_message = msg;
  return d;
}
}  // namespace

class listener_impl : public std::enable_shared_from_this<listener_impl> {
 public:
  using void_op = std::unique_ptr<erased_handler<std::error_code>>;
  using recv_op = std::unique_ptr<erased_handler<std::error_code, notification>>;

  listener_impl(asio::any_io_executor ex, listener_options o)
      : ex_(asio::make_strand(ex)),
        opts_(std::move(o)),
        conn_(ex_, opts_.connection),
        timer_(ex_) {}

  asio::any_io_executor ex_;  // a strand: every member below is used on it
  listener_options opts_;
  connection conn_;
  asio::steady_timer timer_;
  enum class state { idle, connecting, subscribing, ready, backoff, closed } state_ = state::idle;
  std::set<std::string> channels_;
  std::vector<void_op> waiting_listens_;  // complete once subscribed (or on a connect failure)
  std::deque<notification> queue_;
  bool overflow_ = false;
  bool ever_ready_ = false;
  unsigned failures_ = 0;  // consecutive connect failures (backoff exponent)
  recv_op receiver_;
  std::uint64_t receiver_id_ = 0;
  std::uint64_t generation_ = 0;  // bumped per connection: stale callbacks check it
  std::atomic<std::uint64_t> received_{0}, dropped_{0}, reconnects_{0}, connect_failures_{0};
  std::atomic<bool> connected_{false};
  std::atomic<bool> lost_{false};  // was connected, and is not now

  template <class F>
  void run(F f) {
    asio::post(ex_, [self = shared_from_this(), f = std::move(f)]() mutable { f(*self); });
  }

  // ---- API (on the strand) ----------------------------------------------------------
  void listen(std::string ch, bool on, void_op op) {
    if (state_ == state::closed)
      return op->complete(client_diag("listener closed"),
                          make_error_code(std::errc::operation_canceled));
    if (!on) {
      channels_.erase(ch);
      if (state_ != state::ready) return op->complete(nullptr, {});
      return send(quote_ident(ch), "UNLISTEN ", std::move(op));
    }
    channels_.insert(ch);
    if (state_ == state::ready) return send(quote_ident(ch), "LISTEN ", std::move(op));
    waiting_listens_.push_back(std::move(op));
    if (state_ == state::idle) connect();
  }
  void send(const std::string& ident, const char* verb, void_op op) {
    auto text = std::make_shared<std::string>(verb + ident);
    conn_.async_execute(pg::query<>(*text), [self = shared_from_this(), text, op = std::move(op)](
                                                std::error_code ec, std::uint64_t) mutable {
      op->complete(ec ? client_diag(ec.message()) : nullptr, ec);
    });
  }
  void receive(recv_op op) {
    if (state_ == state::closed)
      return op->complete(client_diag("listener closed"),
                          make_error_code(std::errc::operation_canceled), {});
    if (receiver_)
      return op->complete(client_diag("another async_receive is waiting"), errc::busy, {});
    receiver_ = std::move(op);
    const auto id = ++receiver_id_;
    auto slot = receiver_->slot();
    if (slot.is_connected()) {
      slot.assign([w = weak_from_this(), id](asio::cancellation_type) {
        if (auto self = w.lock()) self->run([id](listener_impl& l) { l.cancel_receive(id); });
      });
    }
    deliver();
  }
  void cancel_receive(std::uint64_t id) {
    if (!receiver_ || id != receiver_id_) return;
    auto op = std::move(receiver_);
    op->complete(nullptr, make_error_code(std::errc::operation_canceled), {});
  }

  // ---- the connection ---------------------------------------------------------------
  void connect() {
    state_ = state::connecting;
    const auto gen = ++generation_;
    conn_.async_connect(opts_.dsn, [self = shared_from_this(), gen](std::error_code ec) {
      if (self->state_ == state::closed || gen != self->generation_) return;
      if (ec) return self->connect_failed(ec);
      self->subscribe(gen);
    });
  }
  void connect_failed(std::error_code ec) {
    ++connect_failures_;
    auto d = conn_.last_diagnostics().client_message;
    for (auto& op : waiting_listens_) op->complete(client_diag(d), ec);
    waiting_listens_.clear();
    schedule_reconnect();
  }
  void subscribe(std::uint64_t gen) {
    state_ = state::subscribing;
    std::weak_ptr<listener_impl> w = weak_from_this();
    set_listener_hooks(
        impl_of(conn_),
        [w](const PGnotify& n) {
          if (auto self = w.lock()) self->on_notify(n);
        },
        [w, gen](std::error_code ec) {
          if (auto self = w.lock()) self->lost(gen, ec);
        });
    auto texts = std::make_shared<std::vector<std::string>>();
    batch b;
    for (const auto& ch : channels_) texts->push_back("LISTEN " + quote_ident(ch));
    for (const auto& t : *texts) b.add(t);
    conn_.async_execute(std::move(b),
                        [self = shared_from_this(), texts, gen](std::error_code ec, batch_result) {
                          if (self->state_ == state::closed || gen != self->generation_) return;
                          if (ec) return self->lost(gen, ec);
                          self->ready();
                        });
  }
  void ready() {
    state_ = state::ready;
    failures_ = 0;
    connected_ = true;
    lost_ = false;
    if (ever_ready_) {  // back after a loss: whatever was sent meanwhile is gone
      ++reconnects_;
      queue_.push_back(notification{{}, {}, 0, true});
    }
    ever_ready_ = true;
    for (auto& op : waiting_listens_) op->complete(nullptr, {});
    waiting_listens_.clear();
    deliver();
  }
  void lost(std::uint64_t gen, std::error_code) {
    if (state_ == state::closed || gen != generation_) return;
    connected_ = false;
    lost_ = true;
    ++generation_;  // callbacks of the lost connection are stale now
    schedule_reconnect();
  }
  void schedule_reconnect() {
    state_ = state::backoff;
    ++failures_;
    thread_local std::minstd_rand rng{std::random_device{}()};
    const unsigned shift = std::min(failures_ - 1, 16u);
    const auto cap = std::min<std::int64_t>(opts_.reconnect_max.count(),
                                            opts_.reconnect_initial.count() << shift);
    std::uniform_int_distribution<std::int64_t> d(cap / 2, std::max<std::int64_t>(cap, 1));
    timer_.expires_after(std::chrono::milliseconds(d(rng)));
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->state_ != state::backoff) return;
      self->connect();
    });
  }

  // ---- notifications ----------------------------------------------------------------
  void on_notify(const PGnotify& n) {
    ++received_;
    if (queue_.size() >= opts_.queue_limit) {
      ++dropped_;
      overflow_ = true;
      return;
    }
    if (overflow_) {  // what was dropped sat here
      queue_.push_back(notification{{}, {}, 0, true});
      overflow_ = false;
    }
    queue_.push_back(
        notification{n.relname ? n.relname : "", n.extra ? n.extra : "", n.be_pid, false});
    deliver();
  }
  void deliver() {
    if (!receiver_) return;
    if (queue_.empty() && overflow_) {
      queue_.push_back(notification{{}, {}, 0, true});
      overflow_ = false;
    }
    if (queue_.empty()) return;
    auto n = std::move(queue_.front());
    queue_.pop_front();
    auto op = std::move(receiver_);
    op->complete(nullptr, {}, std::move(n));
  }

  void close() {
    if (state_ == state::closed) return;
    state_ = state::closed;
    connected_ = false;
    ++generation_;
    timer_.cancel();
    set_listener_hooks(impl_of(conn_), nullptr, nullptr);
    conn_.close();
    auto canceled = make_error_code(std::errc::operation_canceled);
    for (auto& op : waiting_listens_) op->complete(client_diag("listener closed"), canceled);
    waiting_listens_.clear();
    if (receiver_) {
      auto op = std::move(receiver_);
      op->complete(client_diag("listener closed"), canceled, {});
    }
  }
};

void listener_listen(const listener_ptr& l, std::string channel, bool on,
                     std::unique_ptr<erased_handler<std::error_code>> h) {
  l->run([ch = std::move(channel), on, h = std::move(h)](listener_impl& self) mutable {
    self.listen(std::move(ch), on, std::move(h));
  });
}
void listener_receive(const listener_ptr& l,
                      std::unique_ptr<erased_handler<std::error_code, notification>> h) {
  l->run([h = std::move(h)](listener_impl& self) mutable { self.receive(std::move(h)); });
}
const asio::any_io_executor& listener_executor(const listener_impl& l) noexcept {
  return l.ex_;
}

}  // namespace detail

listener::listener(asio::any_io_executor ex, listener_options opts)
    : impl_(std::make_shared<detail::listener_impl>(std::move(ex), std::move(opts))) {}
listener::~listener() {
  close();
}
void listener::close() {
  if (impl_) impl_->run([](detail::listener_impl& l) { l.close(); });
}
bool listener::lost() const noexcept { return impl_ && impl_->lost_.load(); }

listener_stats listener::stats() const {
  listener_stats s;
  s.received = impl_->received_;
  s.dropped = impl_->dropped_;
  s.reconnects = impl_->reconnects_;
  s.connect_failures = impl_->connect_failures_;
  s.connected = impl_->connected_;
  return s;
}

}  // namespace inlet::pg
