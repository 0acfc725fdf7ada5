// inlet::buffer::segment — a reference-counted chain of fragment slices that
// reads like one contiguous byte interval.
//
// Ownership: a segment holds one reference on every fragment it points into;
// copying a segment copies its slice list (N slices inline, heap beyond) and
// adds references, never bytes. The bytes are immutable through a segment.
//
// Thread-safety: distinct segment objects may be used on distinct threads even
// when they share fragments (reference counts are atomic); one segment object
// is not safe for concurrent mutation.
//
// Invalidation: iterators and string_views from spans() stay valid while the
// segment is not modified (append, sub-assignment, move-from, destruction);
// string_views of bytes stay valid while any segment refers to those bytes.
#pragma once

#include <cstddef>
#include <inlet/buffer/detail/fragment.hpp>
#include <inlet/buffer/detail/iterator.hpp>
#include <inlet/buffer/detail/slice_vec.hpp>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

namespace inlet::buffer {

class pool;
class streambuf;

class segment {
 public:
  using const_iterator = detail::byte_iterator;
  using iterator = const_iterator;
  using value_type = char;
  using size_type = std::size_t;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  static constexpr std::size_t inline_slices = 4;

  segment() noexcept = default;
  segment(const segment& o);
  segment(segment&& o) noexcept : s_(std::move(o.s_)), size_(std::exchange(o.size_, 0)) {}
  segment& operator=(const segment& o);
  segment& operator=(segment&& o) noexcept;
  ~segment() { clear(); }

  // Copies the bytes into fragments of `p` (default pool: 8 KiB).
  static segment copy_of(std::string_view bytes);
  static segment copy_of(std::string_view bytes, pool& p);
  // External memory that needs no release (literals, static tables).
  static segment wrap(const void* p, std::size_t n);
  // External memory released by `release()` or `release(p, n)` once the last
  // segment referring to it is gone. With n == 0 it runs at once.
  template <class Releaser>
  static segment wrap(const void* p, std::size_t n, Releaser&& release);

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  void clear() noexcept;

  const_iterator begin() const noexcept { return {s_.data(), s_.size(), 0}; }
  const_iterator end() const noexcept { return {s_.data(), s_.size(), size_}; }
  const_iterator iterator_at(std::size_t pos) const noexcept {
    return {s_.data(), s_.size(), pos < size_ ? pos : size_};
  }
  // One string_view per contiguous piece.
  detail::span_range spans() const noexcept { return {s_.data(), s_.size()}; }
  std::size_t span_count() const noexcept { return s_.size(); }

  // Bytes [pos, pos + n) (clamped to size()), sharing the fragments.
  segment sub(std::size_t pos, std::size_t n = npos) const;
  // Adds `o` at the end; adjacent slices of the same fragment merge.
  void append(const segment& o);
  void append(segment&& o);
  // Removes the first / last n bytes (clamped).
  void remove_prefix(std::size_t n) noexcept;
  void remove_suffix(std::size_t n) noexcept;

  // Search from `from`; npos when absent. Patterns that straddle fragments are
  // found; no byte is copied except a straddling candidate's.
  std::size_t find(char c, std::size_t from = 0) const noexcept;
  std::size_t find(std::string_view pattern, std::size_t from = 0) const noexcept;

  // Linearised view of [pos, pos + n): a view into the fragment when the bytes
  // are contiguous, else a copy into `scratch`. Errors: out_of_range when the
  // range is not inside the segment, scratch_too_small when it straddles and
  // does not fit. Never copies more than scratch.size() bytes.
  std::string_view peek(std::size_t pos, std::size_t n, std::span<char> scratch,
                        std::error_code& ec) const noexcept;
  // Copies up to n bytes from pos into out; returns the count copied.
  std::size_t copy_to(char* out, std::size_t pos, std::size_t n) const noexcept;
  // A copy of all bytes (tests, debugging, the store's one copy).
  std::string to_string() const;

  // Heap memory this segment keeps alive: each distinct fragment it refers to
  // counted once (header and capacity; an external fragment: its header and
  // the bytes referenced), plus slice storage beyond the inline slots. Shared
  // fragments are counted whole, as they cannot be freed while this segment
  // lives. O(n log n) in the number of slices: accounting and tests, not a
  // hot path.
  std::size_t footprint() const;

  friend bool operator==(const segment& a, std::string_view b) noexcept;
  friend bool operator==(const segment& a, const segment& b) noexcept;

  // Internal: the slice array (streambuf and find use it).
  const detail::slice* slice_data() const noexcept { return s_.data(); }

 private:
  friend class streambuf;
  friend class copy_appender;
  void push_owned(const detail::slice& s);   // takes over one reference
  void push_shared(const detail::slice& s);  // adds a reference

  detail::slice_vec<inline_slices> s_;
  std::size_t size_ = 0;
};

// Appends copies of byte runs to segments, packing successive copies into the
// one fragment it is filling (segment::copy_of would take a fragment per run).
// A receiver copies small pieces through it instead of referencing the receive
// fragments they lie in: memory then follows the bytes copied, not the number
// of pieces (docs/buffer.md, "Pinned fragments").
//
// Design: it holds one reference on the fragment being filled and the write
// position in it; the bytes before that position belong to segments, the bytes
// after it to nobody, and only this appender writes them. reset() drops the
// fragment (the segments keep what they refer to).
//
// Thread-safety: none; one appender per writer. Segments it appended to may
// go to other threads at once (it never writes bytes they refer to).
class copy_appender {
 public:
  explicit copy_appender(pool& p) noexcept : pool_(&p) {}
  copy_appender();
  copy_appender(const copy_appender&) = delete;
  copy_appender& operator=(const copy_appender&) = delete;
  ~copy_appender() { reset(); }

  // Appends a copy of `bytes` to `dst`; `on_copy(std::string_view)` sees each
  // contiguous run of the copy (views that stay valid while a segment refers
  // to them). Throws std::bad_alloc when the heap is out.
  template <class F>
  void append(segment& dst, std::string_view bytes, F&& on_copy) {
    while (!bytes.empty()) {
      std::string_view run = append_some(dst, bytes);
      bytes.remove_prefix(run.size());
      on_copy(run);
    }
  }
  void append(segment& dst, std::string_view bytes) {
    append(dst, bytes, [](std::string_view) {});
  }
  // Stops filling the current fragment (gives up this appender's reference).
  void reset() noexcept;
  // Does it hold a fragment?
  bool holds_memory() const noexcept { return f_ != nullptr; }

 private:
  std::string_view append_some(segment& dst, std::string_view bytes);
  pool* pool_;
  detail::fragment* f_ = nullptr;
  char* w_ = nullptr;  // next free byte of f_
};

namespace detail {
template <class R>
struct external_fragment : fragment {
  template <class F>
  external_fragment(const void* p, std::size_t n, F&& f) : len(n), release(std::forward<F>(f)) {
    data = static_cast<char*>(const_cast<void*>(p));
    destroy = &external_fragment::destroy_fn;
  }
  static void destroy_fn(fragment* base) noexcept {
    auto* self = static_cast<external_fragment*>(base);
    if constexpr (std::is_invocable_v<R&, const void*, std::size_t>) {
      self->release(static_cast<const void*>(self->data), self->len);
    } else {
      self->release();
    }
    delete self;
  }
  std::size_t len;
  R release;
};
}  // namespace detail

template <class Releaser>
segment segment::wrap(const void* p, std::size_t n, Releaser&& release) {
  using R = std::decay_t<Releaser>;
  static_assert(std::is_invocable_v<R&> || std::is_invocable_v<R&, const void*, std::size_t>,
                "releaser must be callable as r() or r(const void*, std::size_t)");
  auto* f = new (std::nothrow) detail::external_fragment<R>(p, n, std::forward<Releaser>(release));
  if (f == nullptr) {  // the releaser was not moved from: the memory is still released
    if constexpr (std::is_invocable_v<Releaser&, const void*, std::size_t>)
      release(p, n);
    else
      release();
    throw std::bad_alloc();
  }
  segment s;
  if (n == 0) {
    detail::unref(f);
    return s;
  }
  s.push_owned({f, static_cast<const char*>(p), n});
  return s;
}

}  // namespace inlet::buffer
