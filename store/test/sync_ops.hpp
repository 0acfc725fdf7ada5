// Blocking wrappers over the asynchronous store interface, for tests of any store: each
// starts the operation with a callback and waits for it (the callback has no associated
// executor, so a store completes it inline or on its own thread). Never call them from a
// thread the store needs in order to complete.
#pragma once

#include <future>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "inlet/store/store.hpp"

namespace inlet::store::test {

template <class T>
struct outcome {
  std::error_code ec;
  T value{};
};

namespace detail {
// Runs start(callback) and waits for callback(ec, value).
template <class T, class Start>
outcome<T> wait_for(Start&& start) {
  std::promise<outcome<T>> p;
  auto f = p.get_future();
  std::forward<Start>(start)(
      [&p](std::error_code ec, T v) { p.set_value(outcome<T>{ec, std::move(v)}); });
  return f.get();
}
}  // namespace detail

inline outcome<page> list_sync(store& s, list_request req) {
  return detail::wait_for<page>([&](auto cb) { s.async_list(std::move(req), std::move(cb)); });
}

inline outcome<message_ptr> get_sync(store& s, std::string id) {
  return detail::wait_for<message_ptr>([&](auto cb) { s.async_get(std::move(id), std::move(cb)); });
}

inline outcome<std::size_t> remove_sync(store& s, selection sel) {
  return detail::wait_for<std::size_t>(
      [&](auto cb) { s.async_remove(std::move(sel), std::move(cb)); });
}

inline outcome<std::size_t> set_read_sync(store& s, selection sel, bool read) {
  return detail::wait_for<std::size_t>(
      [&](auto cb) { s.async_set_read(std::move(sel), read, std::move(cb)); });
}

inline outcome<std::size_t> set_tags_sync(store& s, selection sel, std::vector<std::string> tags) {
  return detail::wait_for<std::size_t>(
      [&](auto cb) { s.async_set_tags(std::move(sel), std::move(tags), std::move(cb)); });
}

inline outcome<std::vector<std::string>> list_tags_sync(store& s) {
  return detail::wait_for<std::vector<std::string>>(
      [&](auto cb) { s.async_list_tags(std::move(cb)); });
}

inline outcome<std::size_t> rename_tag_sync(store& s, std::string from, std::string to) {
  return detail::wait_for<std::size_t>(
      [&](auto cb) { s.async_rename_tag(std::move(from), std::move(to), std::move(cb)); });
}

inline outcome<std::size_t> delete_tag_sync(store& s, std::string tag) {
  return detail::wait_for<std::size_t>(
      [&](auto cb) { s.async_delete_tag(std::move(tag), std::move(cb)); });
}

/// A listing of the whole store (or one mailbox), newest first.
inline page list_all(store& s, std::size_t start = 0, std::size_t limit = 1000,
                     std::string mailbox = {}) {
  list_request r(start, limit);
  r.mailbox = std::move(mailbox);
  auto o = list_sync(s, std::move(r));
  return std::move(o.value);
}

}  // namespace inlet::store::test
