#include "inlet/store/store.hpp"

#include <condition_variable>
#include <mutex>
#include <random>

namespace inlet::store {

message_ptr store::put_sync(new_message msg, std::error_code& ec) {
  struct state {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::error_code ec;
    message_ptr msg;
  };
  auto st = std::make_shared<state>();
  put(std::move(msg), [st](std::error_code e, message_ptr p) {
    std::lock_guard lk(st->m);
    st->ec = e;
    st->msg = std::move(p);
    st->done = true;
    st->cv.notify_all();
  });
  std::unique_lock lk(st->m);
  st->cv.wait(lk, [&] { return st->done; });
  ec = st->ec;
  return std::move(st->msg);
}

std::string normalize_mailbox(std::string_view a) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!a.empty() && is_space(a.front())) a.remove_prefix(1);
  while (!a.empty() && is_space(a.back())) a.remove_suffix(1);
  if (a.size() >= 2 && a.front() == '<' && a.back() == '>') a = a.substr(1, a.size() - 2);
  std::string out(a);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

message_id make_message_id() {
  static constexpr char alphabet[] =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  thread_local std::mt19937_64 gen = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  // 128 random bits as two 64-bit halves of 11 base62 digits each (62^11 > 2^64), so the
  // divisions are by a constant on 64-bit words (a multiply), not 128-bit library calls.
  char id[id_length];
  for (std::size_t half = 0; half < 2; ++half) {
    std::uint64_t v = gen();
    for (std::size_t i = 11; i-- > 0;) {
      id[half * 11 + i] = alphabet[v % 62];
      v /= 62;
    }
  }
  return message_id(std::string_view(id, id_length));
}

}  // namespace inlet::store
