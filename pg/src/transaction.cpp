// Transactions: BEGIN texts, savepoint texts, what a dropped transaction or savepoint
// sends, the retry policy. The lease logic itself is in connection.cpp.
#include "inlet/pg/transaction.hpp"

#include <array>
#include <deque>
#include <mutex>
#include <string>

namespace inlet::pg {
namespace detail {

std::string_view begin_sql(const transaction_options& o) noexcept {
  // Every combination, built once: the texts must outlive the requests that view them.
  static const std::array<std::string, 16> texts = [] {
    std::array<std::string, 16> t;
    static const char* levels[] = {"", " ISOLATION LEVEL READ COMMITTED",
                                   " ISOLATION LEVEL REPEATABLE READ",
                                   " ISOLATION LEVEL SERIALIZABLE"};
    for (int i = 0; i < 16; ++i) {
      t[i] = std::string("BEGIN") + levels[i & 3] + ((i & 4) ? " READ ONLY" : "") +
             ((i & 8) ? " DEFERRABLE" : "");
    }
    return t;
  }();
  const int i = static_cast<int>(o.level) | (o.read_only ? 4 : 0) | (o.deferrable ? 8 : 0);
  return texts[static_cast<std::size_t>(i)];
}

std::string_view savepoint_sql(unsigned d, int kind) {
  // One name per depth ("inlet_sp<d>"): nested scopes are a stack, and a finished one
  // is always released, so a depth's name is free again. A deque never moves its elements.
  static std::mutex m;
  static std::deque<std::array<std::string, 3>> texts;
  std::lock_guard lk(m);
  while (texts.size() < d) {
    const std::string name = "inlet_sp" + std::to_string(texts.size() + 1);
    texts.push_back(
        {"SAVEPOINT " + name, "RELEASE SAVEPOINT " + name, "ROLLBACK TO SAVEPOINT " + name});
  }
  return texts[d - 1][static_cast<std::size_t>(kind)];
}

namespace {
/// A statement nobody waits for; keeps the transaction's state (and so its pooled
/// connection) until the connection is done with it.
struct detached final : request_base {
  std::string_view text;
  std::string owned;  // when the text is made per use
  tx_ptr keep;
  batch b;
  std::string_view sql() const noexcept override { return text; }
  void bind(param_buffer&, std::error_code&) const override {}
  void deliver(conn_impl&, std::error_code, completion_from) override { keep.reset(); }
  void destroy() noexcept override { delete this; }
};
}  // namespace

void drop_transaction(tx_ptr t) {
  if (!t || !t->active()) return;
  auto impl = t->impl;
  auto* r = new detached;
  r->text = "ROLLBACK";
  r->owner = std::exchange(t->lease, 0);  // savepoints see it ended
  r->lease = lease_action::end;
  r->keep = std::move(t);
  start_request(impl, r);
}

void drop_savepoint(const tx_ptr& t, unsigned depth) {
  if (!t || !t->active() || depth == 0) return;
  if (t->depth >= depth) t->depth = depth - 1;
  auto* r = new detached;
  r->b.add(savepoint_sql(depth, 2));
  r->b.add(savepoint_sql(depth, 1));
  r->bat = &r->b;
  r->owner = t->lease;
  start_request(t->impl, r);
}

void drop_cursor(const tx_ptr& t, std::string name) {
  if (!t || !t->active()) return;
  auto* r = new detached;
  r->owned = "CLOSE " + name;
  r->text = r->owned;
  r->unnamed = true;
  r->owner = t->lease;
  start_request(t->impl, r);
}

transaction make_transaction(tx_ptr t) {
  return transaction(std::move(t));
}
savepoint make_savepoint(tx_ptr t, unsigned depth) {
  return savepoint(std::move(t), depth);
}

}  // namespace detail

transaction& transaction::operator=(transaction&& o) noexcept {
  if (this != &o) {
    detail::drop_transaction(std::move(t_));
    t_ = std::move(o.t_);
  }
  return *this;
}
transaction::~transaction() {
  detail::drop_transaction(std::move(t_));
}
asio::any_io_executor transaction::get_executor() const noexcept {
  return t_ && t_->impl ? detail::executor_of(*t_->impl) : asio::any_io_executor{};
}

savepoint& savepoint::operator=(savepoint&& o) noexcept {
  if (this != &o) {
    detail::drop_savepoint(t_, depth_);
    t_ = std::move(o.t_);
    depth_ = std::exchange(o.depth_, 0);
  }
  return *this;
}
savepoint::~savepoint() {
  detail::drop_savepoint(t_, depth_);
}

bool retryable(std::error_code ec) noexcept {
  return ec == condition::serialization_failure || ec == condition::deadlock_detected;
}

std::chrono::milliseconds retry_delay(const retry_policy& p, unsigned attempt) {
  thread_local std::minstd_rand rng{std::random_device{}()};
  const unsigned shift = attempt > 1 ? std::min(attempt - 1, 20u) : 0u;
  auto cap = std::min<std::int64_t>(p.max_delay.count(), p.initial_delay.count() << shift);
  if (cap <= 0) return std::chrono::milliseconds(0);
  std::uniform_int_distribution<std::int64_t> d(0, cap);
  return std::chrono::milliseconds(d(rng));
}

}  // namespace inlet::pg
