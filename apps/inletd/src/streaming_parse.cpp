#include "streaming_parse.hpp"

#include <memory>
#include <vector>

namespace inletd {

namespace {

struct observer_pool {
  std::vector<std::unique_ptr<parse_observer>> free;
};

observer_pool& pool() {
  thread_local observer_pool p;
  return p;
}

}  // namespace

inlet::smtp::body_observer_ptr parse_observer::make() {
  auto& p = pool();
  if (p.free.empty()) return inlet::smtp::body_observer_ptr(new parse_observer);
  parse_observer* o = p.free.back().release();
  p.free.pop_back();
  return inlet::smtp::body_observer_ptr(o);
}

void parse_observer::dispose() noexcept {
  parser_.reset();  // no views kept into a body that is going away
  auto& p = pool();
  if (p.free.size() >= pool_limit) {
    delete this;
    return;
  }
  try {
    p.free.emplace_back(this);
  } catch (...) {  // the vector could not grow: unique_ptr's constructor did not run
    delete this;
  }
}

const inlet::mime::parsed_message* streamed_parse(const inlet::smtp::received_message& m) noexcept {
  auto* o = dynamic_cast<const parse_observer*>(m.observer.get());
  return o && o->finished() ? &o->message() : nullptr;
}

}  // namespace inletd
