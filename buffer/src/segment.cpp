#include <algorithm>
#include <cstring>
#include <inlet/buffer/error.hpp>
#include <inlet/buffer/pool.hpp>
#include <inlet/buffer/segment.hpp>
#include <vector>

namespace inlet::buffer {

using detail::slice;

segment::segment(const segment& o) : s_(o.s_), size_(o.size_) {
  for (std::size_t i = 0; i < s_.size(); ++i) detail::add_ref(s_[i].f);
}

segment& segment::operator=(const segment& o) {
  if (this != &o) {
    segment t(o);
    *this = std::move(t);
  }
  return *this;
}

segment& segment::operator=(segment&& o) noexcept {
  if (this != &o) {
    clear();
    s_ = std::move(o.s_);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void segment::clear() noexcept {
  for (std::size_t i = 0; i < s_.size(); ++i) detail::unref(s_[i].f);
  s_.clear();
  s_.shrink_to_fit();
  size_ = 0;
}

void segment::push_owned(const slice& s) {
  if (s.n == 0) {
    detail::unref(s.f);
    return;
  }
  if (!s_.empty()) {
    slice& b = s_.back();
    if (b.f != nullptr && b.f == s.f && b.p + b.n == s.p) {
      b.n += s.n;
      size_ += s.n;
      detail::unref(s.f);  // the merged slice keeps one reference
      return;
    }
  }
  try {
    s_.push_back(s);
  } catch (...) {
    detail::unref(s.f);
    throw;
  }
  size_ += s.n;
}

void segment::push_shared(const slice& s) {
  if (s.n == 0) return;
  detail::add_ref(s.f);
  push_owned(s);
}

segment segment::copy_of(std::string_view bytes) {
  return copy_of(bytes, pool::get());
}

segment segment::copy_of(std::string_view bytes, pool& p) {
  segment out;
  while (!bytes.empty()) {
    detail::fragment* f = p.acquire();
    std::size_t take = std::min<std::size_t>(f->capacity, bytes.size());
    std::memcpy(f->data, bytes.data(), take);
    out.push_owned({f, f->data, take});
    bytes.remove_prefix(take);
  }
  return out;
}

std::size_t segment::footprint() const {
  std::vector<const detail::fragment*> seen;
  seen.reserve(s_.size());
  std::size_t external = 0;
  for (std::size_t i = 0; i < s_.size(); ++i) {
    const slice& s = s_[i];
    if (s.f == nullptr) continue;
    if (s.f->capacity == 0) external += s.n;  // wrapped memory: only what is referenced is known
    seen.push_back(s.f);
  }
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  std::size_t bytes = external;
  for (const detail::fragment* f : seen) bytes += sizeof(detail::fragment) + f->capacity;
  if (s_.on_heap()) bytes += s_.capacity() * sizeof(slice);
  return bytes;
}

copy_appender::copy_appender() : copy_appender(pool::get()) {}

void copy_appender::reset() noexcept {
  detail::unref(f_);
  f_ = nullptr;
  w_ = nullptr;
}

std::string_view copy_appender::append_some(segment& dst, std::string_view bytes) {
  if (f_ == nullptr || w_ == f_->data + f_->capacity) {
    reset();
    f_ = pool_->acquire();
    w_ = f_->data;
  }
  std::size_t room = static_cast<std::size_t>(f_->data + f_->capacity - w_);
  std::size_t k = std::min(room, bytes.size());
  std::memcpy(w_, bytes.data(), k);
  dst.push_shared({f_, w_, k});  // merges with dst's last slice when it ends at w_
  std::string_view run(w_, k);
  w_ += k;
  return run;
}

segment segment::wrap(const void* p, std::size_t n) {
  segment s;
  if (n != 0) s.push_owned({nullptr, static_cast<const char*>(p), n});
  return s;
}

segment segment::sub(std::size_t pos, std::size_t n) const {
  segment out;
  if (pos >= size_) return out;
  n = std::min(n, size_ - pos);
  std::size_t base = 0;
  for (std::size_t i = 0; i < s_.size() && n > 0; ++i) {
    const slice& s = s_[i];
    if (pos >= base + s.n) {
      base += s.n;
      continue;
    }
    std::size_t off = pos > base ? pos - base : 0;
    std::size_t take = std::min(s.n - off, n);
    out.push_shared({s.f, s.p + off, take});
    n -= take;
    base += s.n;
  }
  return out;
}

void segment::append(const segment& o) {
  if (&o == this) {
    segment copy(o);
    append(std::move(copy));
    return;
  }
  s_.reserve_more(o.s_.size());
  for (std::size_t i = 0; i < o.s_.size(); ++i) push_shared(o.s_[i]);
}

void segment::append(segment&& o) {
  if (&o == this) {
    segment copy(o);
    append(std::move(copy));
    return;
  }
  s_.reserve_more(o.s_.size());  // push_owned cannot throw after this
  for (std::size_t i = 0; i < o.s_.size(); ++i) push_owned(o.s_[i]);
  o.s_.clear();
  o.s_.shrink_to_fit();
  o.size_ = 0;
}

void segment::remove_prefix(std::size_t n) noexcept {
  n = std::min(n, size_);
  size_ -= n;
  detail::release_front(s_, n);
}

void segment::remove_suffix(std::size_t n) noexcept {
  n = std::min(n, size_);
  size_ -= n;
  while (n > 0) {
    slice& s = s_.back();
    if (n >= s.n) {
      n -= s.n;
      detail::unref(s.f);
      s_.pop_back();
    } else {
      s.n -= n;
      n = 0;
    }
  }
}

std::size_t segment::find(char c, std::size_t from) const noexcept {
  return detail::find_byte(s_.data(), s_.size(), size_, c, from);
}

std::size_t segment::find(std::string_view pattern, std::size_t from) const noexcept {
  return detail::find_pattern(s_.data(), s_.size(), size_, pattern, from);
}

namespace detail {
std::string_view peek_slices(const slice* s, std::size_t count, std::size_t total, std::size_t pos,
                             std::size_t n, std::span<char> scratch, std::error_code& ec) noexcept {
  ec.clear();
  if (pos > total || n > total - pos) {
    ec = make_error_code(errc::out_of_range);
    return {};
  }
  if (n == 0) return {};
  std::size_t base = 0;
  std::size_t i = 0;
  while (i < count && pos >= base + s[i].n) base += s[i++].n;
  std::size_t off = pos - base;
  if (s[i].n - off >= n) return {s[i].p + off, n};  // contiguous: no copy
  if (n > scratch.size()) {
    ec = make_error_code(errc::scratch_too_small);
    return {};
  }
  std::size_t done = 0;
  while (done < n) {
    std::size_t take = std::min(s[i].n - off, n - done);
    std::memcpy(scratch.data() + done, s[i].p + off, take);
    done += take;
    ++i;
    off = 0;
  }
  return {scratch.data(), n};
}

std::size_t copy_slices(const slice* s, std::size_t count, char* out, std::size_t pos,
                        std::size_t n) noexcept {
  std::size_t done = 0;
  std::size_t base = 0;
  for (std::size_t i = 0; i < count && done < n; ++i) {
    if (pos >= base + s[i].n) {
      base += s[i].n;
      continue;
    }
    std::size_t off = pos + done - base;
    std::size_t take = std::min(s[i].n - off, n - done);
    std::memcpy(out + done, s[i].p + off, take);
    done += take;
    base += s[i].n;
  }
  return done;
}
}  // namespace detail

std::string_view segment::peek(std::size_t pos, std::size_t n, std::span<char> scratch,
                               std::error_code& ec) const noexcept {
  return detail::peek_slices(s_.data(), s_.size(), size_, pos, n, scratch, ec);
}

std::size_t segment::copy_to(char* out, std::size_t pos, std::size_t n) const noexcept {
  return detail::copy_slices(s_.data(), s_.size(), out, pos, n);
}

std::string segment::to_string() const {
  std::string out;
  out.reserve(size_);
  for (std::string_view v : spans()) out.append(v);
  return out;
}

bool operator==(const segment& a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  std::size_t off = 0;
  for (std::string_view v : a.spans()) {
    if (std::memcmp(v.data(), b.data() + off, v.size()) != 0) return false;
    off += v.size();
  }
  return true;
}

}  // namespace inlet::buffer

namespace inlet::buffer {
bool operator==(const segment& a, const segment& b) noexcept {
  if (a.size() != b.size()) return false;
  auto ia = a.spans().begin(), ib = b.spans().begin();
  std::string_view va, vb;
  std::size_t left = a.size();
  while (left > 0) {
    if (va.empty()) va = *ia++;
    if (vb.empty()) vb = *ib++;
    std::size_t k = std::min(va.size(), vb.size());
    if (std::memcmp(va.data(), vb.data(), k) != 0) return false;
    va.remove_prefix(k);
    vb.remove_prefix(k);
    left -= k;
  }
  return true;
}
}  // namespace inlet::buffer
