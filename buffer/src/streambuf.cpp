// streambuf: see ../DESIGN.md ("Streambuf").
#include <algorithm>
#include <functional>
#include <inlet/buffer/error.hpp>
#include <inlet/buffer/streambuf.hpp>
#include <stdexcept>

namespace inlet::buffer {

using piece = detail::slice;

streambuf::streambuf(streambuf&& o) noexcept
    : pool_(o.pool_),
      max_size_(o.max_size_),
      size_(std::exchange(o.size_, 0)),
      writable_(std::exchange(o.writable_, 0)),
      rd_(std::move(o.rd_)),
      wr_(std::move(o.wr_)) {}

streambuf& streambuf::operator=(streambuf&& o) noexcept {
  if (this != &o) {
    release_all();
    pool_ = o.pool_;
    max_size_ = o.max_size_;
    size_ = std::exchange(o.size_, 0);
    writable_ = std::exchange(o.writable_, 0);
    rd_ = std::move(o.rd_);
    wr_ = std::move(o.wr_);
  }
  return *this;
}

void streambuf::release_all() noexcept {
  for (std::size_t i = 0; i < rd_.size(); ++i) detail::unref(rd_[i].f);
  for (std::size_t i = 0; i < wr_.size(); ++i) detail::unref(wr_[i].f);
  rd_.clear();
  wr_.clear();
  rd_.shrink_to_fit();
  wr_.shrink_to_fit();
  size_ = 0;
  writable_ = 0;
}

std::size_t streambuf::fragment_count() const noexcept {
  std::size_t n = 0;
  const detail::fragment* last = nullptr;
  for (std::size_t i = 0; i < rd_.size(); ++i) {
    if (rd_[i].f != last) ++n;
    last = rd_[i].f;
  }
  for (std::size_t i = 0; i < wr_.size(); ++i) {
    if (wr_[i].f != last) ++n;
    last = wr_[i].f;
  }
  return n;
}

streambuf::mutable_buffers_type streambuf::prepare_slow(std::size_t n) {
  if (n > max_size_ - size_) throw std::length_error("inlet::buffer::streambuf too long");
  rewind_if_possible();
  while (writable_ < n) {
    detail::fragment* f = pool_->acquire();
    try {
      wr_.push_back(piece{f, f->data, f->capacity});
    } catch (...) {
      detail::unref(f);
      throw;
    }
    writable_ += f->capacity;
  }
  // commit() must not allocate: room for one readable piece per writable one.
  rd_.reserve(rd_.size() + wr_.size());
  if (n == 0) return {};
  // Pieces covering n bytes.
  std::size_t count = 0;
  std::size_t acc = 0;
  while (acc < n) acc += wr_[count++].n;
  std::size_t last_len = wr_[count - 1].n - (acc - n);
  return {wr_.data(), count, 0, last_len, n};
}

void streambuf::commit_slow(std::size_t n) noexcept {
  n = std::min(n, writable_);
  std::size_t popped = 0;
  while (n > 0) {
    piece& w = wr_[popped];
    std::size_t take = std::min(n, w.n);
    bool merged = false;
    if (!rd_.empty()) {
      piece& b = rd_.back();
      if (b.f == w.f && b.p + b.n == w.p) {
        b.n += take;
        merged = true;
      }
    }
    if (!merged) {
      // prepare() reserved room for this; should it ever be short, growing
      // throws bad_alloc inside noexcept: out of memory ends the process.
      detail::add_ref(w.f);
      rd_.push_back(piece{w.f, w.p, take});
    }
    w.p += take;
    w.n -= take;
    size_ += take;
    writable_ -= take;
    n -= take;
    if (w.n == 0) {
      detail::unref(w.f);
      ++popped;
    }
  }
  wr_.erase_front(popped);
}

void streambuf::consume(std::size_t n) noexcept {
  n = std::min(n, size_);
  size_ -= n;
  detail::release_front(rd_, n);
  // No rewind here: a read into the last prepare() sequence may be in flight
  // (prepare() rewinds instead).
}

// With nothing readable, a write fragment nobody else refers to can be
// written again from its first byte. Only prepare() calls this: it is the
// call that invalidates earlier prepared sequences anyway.
void streambuf::rewind_if_possible() noexcept {
  if (size_ != 0 || wr_.empty()) return;
  piece& w = wr_[0];
  if (w.p != w.f->data && detail::sole_owner(w.f, 1)) {
    std::size_t back = static_cast<std::size_t>(w.p - w.f->data);
    w.p = w.f->data;
    w.n += back;
    writable_ += back;
  }
}

namespace {
struct window {
  std::size_t first = 0, count = 0, off = 0, last_len = 0, total = 0;
};

// The pieces of rd covering readable bytes [pos, pos + n), n clamped.
template <class Vec>
window locate_window(const Vec& rd, std::size_t size, std::size_t pos, std::size_t n) noexcept {
  window w;
  if (pos >= size) return w;
  n = std::min(n, size - pos);
  if (n == 0) return w;
  std::size_t i = 0, base = 0;
  while (pos >= base + rd[i].n) base += rd[i++].n;
  w.first = i;
  w.off = pos - base;
  w.total = n;
  std::size_t acc = rd[i].n - w.off;  // bytes covered through piece i
  while (acc < n) acc += rd[++i].n;
  w.count = i - w.first + 1;
  std::size_t piece_len = w.count == 1 ? rd[i].n - w.off : rd[i].n;
  w.last_len = piece_len - (acc - n);
  return w;
}
}  // namespace

streambuf::mutable_buffers_type streambuf::data(std::size_t pos, std::size_t n) noexcept {
  window w = locate_window(rd_, size_, pos, n);
  if (w.count == 0) return {};
  return {rd_.data() + w.first, w.count, w.off, w.last_len, w.total};
}

streambuf::const_buffers_type streambuf::data(std::size_t pos, std::size_t n) const noexcept {
  window w = locate_window(rd_, size_, pos, n);
  if (w.count == 0) return {};
  return {rd_.data() + w.first, w.count, w.off, w.last_len, w.total};
}

void streambuf::grow(std::size_t n) {
  prepare(n);
  commit(n);
}

void streambuf::shrink(std::size_t n) noexcept {
  n = std::min(n, size_);
  size_ -= n;
  while (n > 0) {
    piece& b = rd_.back();
    std::size_t k = std::min(n, b.n);
    shrink_one(k);
    n -= k;
  }
}

// Drops the last k bytes of the last readable piece (k <= its size); gives
// them back to the writable space when nobody else can see them.
void streambuf::shrink_one(std::size_t k) noexcept {
  piece& b = rd_.back();
  const char* cut = b.p + b.n - k;
  bool empty = (k == b.n);
  b.n -= k;
  detail::fragment* f = b.f;
  if (!wr_.empty() && wr_[0].f == f && wr_[0].p == cut + k && detail::sole_owner(f, 2)) {
    // Right before the write cursor of the same fragment.
    wr_[0].p = cut;
    wr_[0].n += k;
    writable_ += k;
  } else if (detail::sole_owner(f, 1) && cut + k == f->data + f->capacity &&
             (wr_.empty() || wr_[0].f != f)) {
    // The fragment's tail: it becomes the first writable piece again. This
    // must not fail: push_front can only allocate when wr_ is full, so
    // make room first without losing the fragment if that throws.
    try {
      detail::add_ref(f);
      wr_.push_front(piece{f, cut, k});
      writable_ += k;
    } catch (...) {
      detail::unref(f);
    }
  }
  if (empty) {
    detail::unref(f);
    rd_.pop_back();
  }
}

std::string_view streambuf::peek(std::size_t pos, std::size_t n, std::span<char> scratch,
                                 std::error_code& ec) const noexcept {
  return detail::peek_slices(rd_.data(), rd_.size(), size_, pos, n, scratch, ec);
}

segment streambuf::detach(std::size_t n) {
  n = std::min(n, size_);
  segment out;
  if (n == 0) return out;
  // Count the pieces first so that the segment's storage is reserved before
  // any reference moves (no throw after that point).
  std::size_t whole = 0, acc = 0;
  while (whole < rd_.size() && acc + rd_[whole].n <= n) acc += rd_[whole++].n;
  bool partial = acc < n;
  out.s_.reserve(whole + (partial ? 1 : 0));
  for (std::size_t i = 0; i < whole; ++i) out.push_owned(rd_[i]);
  if (partial) {
    piece& s = rd_[whole];
    std::size_t k = n - acc;
    detail::add_ref(s.f);
    out.push_owned(piece{s.f, s.p, k});
    s.p += k;
    s.n -= k;
  }
  rd_.erase_front(whole);
  size_ -= n;
  return out;
}

segment streambuf::slice(const char* p, std::size_t n, std::error_code& ec) const {
  ec.clear();
  segment out;
  std::less<const char*> lt;
  std::size_t i = 0;
  for (; i < rd_.size(); ++i) {
    const auto& s = rd_[i];
    if (!lt(p, s.p) && lt(p, s.p + s.n)) break;
  }
  if (i == rd_.size()) {
    if (n != 0) ec = make_error_code(errc::out_of_range);
    return out;
  }
  // Check the range first, then take references.
  std::size_t off = static_cast<std::size_t>(p - rd_[i].p);
  std::size_t avail = rd_[i].n - off;
  for (std::size_t j = i + 1; j < rd_.size() && avail < n; ++j) avail += rd_[j].n;
  if (avail < n) {
    ec = make_error_code(errc::out_of_range);
    return out;
  }
  while (n > 0) {
    std::size_t take = std::min(n, rd_[i].n - off);
    out.push_shared(piece{rd_[i].f, rd_[i].p + off, take});
    n -= take;
    ++i;
    off = 0;
  }
  return out;
}

segment streambuf::sub(std::size_t pos, std::size_t n) const {
  segment out;
  if (pos >= size_) return out;
  n = std::min(n, size_ - pos);
  std::size_t base = 0;
  for (std::size_t i = 0; i < rd_.size() && n > 0; ++i) {
    const auto& s = rd_[i];
    if (pos >= base + s.n) {
      base += s.n;
      continue;
    }
    std::size_t off = pos > base ? pos - base : 0;
    std::size_t take = std::min(s.n - off, n);
    out.push_shared(piece{s.f, s.p + off, take});
    n -= take;
    base += s.n;
  }
  return out;
}

bool streambuf::release_if_empty() noexcept {
  if (size_ != 0) return false;
  release_all();
  return true;
}

bool streambuf::release_spare() noexcept {
  if (size_ != 0) return false;
  if (wr_.empty() || detail::sole_owner(wr_[0].f, 1)) {
    release_all();
    return true;
  }
  for (std::size_t i = 1; i < wr_.size(); ++i) detail::unref(wr_[i].f);
  piece keep = wr_[0];
  wr_.clear();
  wr_.shrink_to_fit();
  wr_.push_back(keep);  // inline storage: cannot throw
  rd_.shrink_to_fit();
  writable_ = keep.n;
  return false;
}

}  // namespace inlet::buffer
