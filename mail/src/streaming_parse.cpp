#include "inlet/mail/streaming_parse.hpp"

#include <memory>
#include <vector>

namespace inlet::mail {

struct parse_observer::pool {
  std::vector<std::unique_ptr<parse_observer>> free;

  static pool& mine() {
    thread_local pool p;
    return p;
  }
};

inlet::smtp::body_observer_ptr parse_observer::make() {
  auto& p = pool::mine();
  parse_observer* o = nullptr;
  if (p.free.empty()) {
    o = new parse_observer;
  } else {
    o = p.free.back().release();
    p.free.pop_back();
  }
  o->home_ = &p;
  return inlet::smtp::body_observer_ptr(o);
}

void parse_observer::dispose() noexcept {
  parser_.reset();  // no views kept into a body that is going away
  auto& p = pool::mine();
  // A message handed to another thread (a heavy message's worker) ends there: that
  // thread makes no observers, so a pool there would only hold memory.
  if (&p != home_ || p.free.size() >= pool_limit) {
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

}  // namespace inlet::mail
