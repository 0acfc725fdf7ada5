// Shared bookkeeping of the drivers in their own files. See driver_common.hpp.
#include "driver_common.hpp"

#include <boost/asio/write.hpp>
#include <cstdio>
#include <optional>

namespace inlet::smtp::detail {

void call_deliver(const deliver_fn& hook, driver_counters& c, received_message&& msg,
                  delivery_callback done) {
  if (!hook) {
    char id[24];
    std::snprintf(id, sizeof id, "%016llX",
                  static_cast<unsigned long long>(c.queue_seq.fetch_add(1) + 1));
    done(delivery_result{delivery_status::accepted(id), {}});
    return;
  }
  auto once = std::make_shared<std::atomic<bool>>(false);
  auto guarded = [once, done](delivery_result r) {
    if (!once->exchange(true)) done(std::move(r));
  };
  try {
    hook(std::move(msg), guarded);
  } catch (...) {
    guarded(delivery_result{
        delivery_status::rejected(451, "4.3.0", "Error: local delivery failure"), {}});
  }
}

void count(driver_counters& c, const delivery_result& r) {
  (r.status.ok() ? c.delivered : c.rejected).fetch_add(1, std::memory_order_relaxed);
}

delivery_result deliver_sync(const deliver_fn& hook, driver_counters& c, received_message&& msg) {
  // Shared state: the callback may run on another thread after we returned
  // from a spurious wake-up path; keep it alive with the callback.
  struct waiter {
    std::mutex m;
    std::condition_variable cv;
    std::optional<delivery_result> res;
  };
  auto w = std::make_shared<waiter>();
  call_deliver(hook, c, std::move(msg), [w](delivery_result r) {
    std::lock_guard lk(w->m);
    w->res = std::move(r);
    w->cv.notify_one();
  });
  std::unique_lock lk(w->m);
  w->cv.wait(lk, [&] { return w->res.has_value(); });
  count(c, *w->res);
  return std::move(*w->res);
}

void body_collector::begin() {
  if (!factory_) return;
  obs_ = (*factory_)();
  if (obs_) obs_->begin();
}

void body_collector::add(std::string_view data, std::uint64_t session_body_size) {
  if (fed_ + data.size() != session_body_size) abort();  // an unfinished body was dropped
  if (fed_ == 0 && factory_) begin();
  fed_ += data.size();
  if (in_.flat()) {
    if (!obs_) {
      in_.piece(data);  // the baseline's copy: one growing string
      return;
    }
    obs_->data(in_.copy_flat_stable(data));
    return;
  }
  if (data.size() >= min_slice) {
    std::error_code ec;
    buffer::segment s = in_.buf().slice(data.data(), data.size(), ec);  // no copy
    if (!ec) {
      if (obs_)
        for (std::string_view piece : s.spans()) obs_->data(piece);
      body_.append(std::move(s));
      return;
    }
  }
  copies_.append(body_, data, [this](std::string_view copy) {
    if (obs_) obs_->data(copy);
  });
}

received_message body_collector::complete(envelope env, std::uint64_t session_body_size) {
  if (fed_ != session_body_size) abort();  // e.g. RSET, then BDAT 0 LAST
  if (fed_ == 0 && factory_) begin();      // an empty body is observed too
  received_message msg{std::move(env), in_.flat() ? in_.take_flat_body() : std::move(body_)};
  body_ = message_body{};
  copies_.reset();  // the body keeps what it refers to; an idle connection holds nothing
  if (obs_) obs_->end();
  msg.observer = std::move(obs_);
  fed_ = 0;
  return msg;
}

void body_collector::abort() noexcept {
  if (obs_) {
    obs_->abort();
    obs_.reset();
  }
  body_.clear();
  copies_.reset();
  in_.drop_flat_body();
  fed_ = 0;
}

bool admission::admit(const std::string& ip) {
  std::lock_guard lk(mu_);
  if (active_ >= max_) return false;
  auto& n = per_ip_[ip];
  if (n >= max_ip_) {
    if (n == 0) per_ip_.erase(ip);
    return false;
  }
  ++n;
  ++active_;
  return true;
}

void admission::release(const std::string& ip) {
  std::lock_guard lk(mu_);
  auto it = per_ip_.find(ip);
  if (it != per_ip_.end() && --it->second == 0) per_ip_.erase(it);
  if (--active_ == 0) idle_.notify_all();
}

std::size_t admission::active() const {
  std::lock_guard lk(mu_);
  return active_;
}

bool admission::wait_idle_until(clock::time_point deadline) {
  std::unique_lock lk(mu_);
  return idle_.wait_until(lk, deadline, [&] { return active_ == 0; });
}

void admission::wait_idle() {
  std::unique_lock lk(mu_);
  idle_.wait(lk, [&] { return active_ == 0; });
}

std::error_code open_listeners(const server_config& cfg,
                               const std::function<boost::asio::any_io_executor()>& make_executor,
                               std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>>& out,
                               std::vector<listen_endpoint>& bound) {
  namespace asio = boost::asio;
  using tcp = asio::ip::tcp;
  for (const auto& l : cfg.listen) {
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(l.address, ec);
    if (ec) return std::make_error_code(std::errc::invalid_argument);
    auto acc = std::make_unique<tcp::acceptor>(make_executor());
    tcp::endpoint ep(addr, l.port);
    acc->open(ep.protocol(), ec);
    if (!ec) acc->set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acc->bind(ep, ec);
    if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return std::error_code(ec.value(), std::system_category());
    auto local = acc->local_endpoint(ec);
    bound.push_back(listen_endpoint{local.address().to_string(), local.port(), l.lmtp});
    out.push_back(std::move(acc));
  }
  return {};
}

void refuse(boost::asio::ip::tcp::socket& s, const server_config& cfg, bool stopping) {
  boost::system::error_code ig;
  std::string r = stopping ? shutting_down_reply(cfg) : refusal_reply(cfg);
  boost::asio::write(s, boost::asio::buffer(r), ig);
  s.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ig);
  s.close(ig);
}

std::string refusal_reply(const server_config& cfg) {
  return "421 4.7.0 " + cfg.session.hostname + " Error: too many connections\r\n";
}

std::string shutting_down_reply(const server_config& cfg) {
  return "421 4.3.2 " + cfg.session.hostname + " Service shutting down\r\n";
}

session_config session_for(const server_config& cfg, bool lmtp, bool tls_offered) {
  session_config s = cfg.session;
  s.lmtp = lmtp;
  s.starttls = tls_offered;
  return s;
}

}  // namespace inlet::smtp::detail
