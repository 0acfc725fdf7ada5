// inlet::buffer::streambuf — the buffer a socket reads into and a parser reads
// from: readable bytes in pooled fragments, writable space in more fragments,
// and `detach` / `slice` to hand bytes on as segments without copying.
//
// Asio: the streambuf is the storage. `dynamic_buffer(sb)` is the copyable
// DynamicBuffer_v2 handle Asio's composed operations take (async_read,
// async_read_until, read, write); `prepare(n)`/`commit(n)` serve
// async_read_some directly. prepare(n) returns a buffer sequence that may
// span several fragments, so one readv/recvmsg fills them all.
//
// Thread-safety: none; one streambuf belongs to one connection at a time.
// Segments taken from it may go to other threads.
//
// Invalidation: the sequence from prepare() stays valid across consume(),
// detach(), slice(), sub() and reads, so a read into it may be in flight
// while the driver consumes or detaches readable bytes (commit(n) when it
// completes); it is invalidated by prepare(), grow(), shrink(),
// release_if_empty(), moving or destroying the streambuf. Sequences from
// data(), iterators and readable_spans() are invalidated by any non-const
// call. Bytes handed out as segments never change and stay alive as long as
// those segments.
#pragma once

#include <boost/asio/buffer.hpp>
#include <cstddef>
#include <inlet/buffer/detail/buffer_seq.hpp>
#include <inlet/buffer/detail/iterator.hpp>
#include <inlet/buffer/detail/slice_vec.hpp>
#include <inlet/buffer/pool.hpp>
#include <inlet/buffer/segment.hpp>
#include <limits>
#include <string_view>
#include <system_error>

namespace inlet::buffer {

class streambuf {
 public:
  using const_buffers_type = detail::buffer_seq<boost::asio::const_buffer>;
  using mutable_buffers_type = detail::buffer_seq<boost::asio::mutable_buffer>;
  using const_iterator = detail::byte_iterator;
  using iterator = const_iterator;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  explicit streambuf(pool& p = pool::get(),
                     std::size_t max_size = std::numeric_limits<std::size_t>::max()) noexcept
      : pool_(&p), max_size_(max_size) {}
  explicit streambuf(std::size_t max_size) noexcept : streambuf(pool::get(), max_size) {}
  streambuf(const streambuf&) = delete;
  streambuf& operator=(const streambuf&) = delete;
  streambuf(streambuf&& o) noexcept;
  streambuf& operator=(streambuf&& o) noexcept;
  ~streambuf() { release_all(); }

  // ---- sizes
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t max_size() const noexcept { return max_size_; }
  // Readable bytes plus writable space already held (no allocation needed).
  std::size_t capacity() const noexcept { return size_ + writable_; }
  pool& fragment_pool() const noexcept { return *pool_; }
  // Fragments this buffer references (readable or writable).
  std::size_t fragment_count() const noexcept;

  // ---- DynamicBuffer_v1 style
  // Writable space for n bytes, possibly over several fragments. Throws
  // std::length_error past max_size(), std::bad_alloc when the heap is out.
  mutable_buffers_type prepare(std::size_t n) {
    // Fast path (inline): the first writable piece holds n bytes, readable
    // data pins it (no rewind possible) and rd_ has a free slot for commit().
    if (size_ != 0 && n != 0 && !wr_.empty() && wr_[0].n >= n && rd_.size() < rd_.capacity() &&
        n <= max_size_ - size_)
      return {wr_.data(), 1, 0, n, n};
    return prepare_slow(n);
  }
  // Moves n bytes (clamped) from the prepared space to the readable data.
  void commit(std::size_t n) noexcept {
    // Fast path (inline): the bytes continue the last readable piece inside
    // the same fragment and do not use up the first writable piece.
    if (!wr_.empty() && !rd_.empty() && n < wr_[0].n) {
      detail::slice& w = wr_[0];
      detail::slice& b = rd_.back();
      if (b.f == w.f && b.p + b.n == w.p) {
        b.n += n;
        w.p += n;
        w.n -= n;
        size_ += n;
        writable_ -= n;
        return;
      }
    }
    commit_slow(n);
  }
  const_buffers_type data() const noexcept { return data(0, size_); }

  // ---- DynamicBuffer_v2 style
  mutable_buffers_type data(std::size_t pos, std::size_t n) noexcept;
  const_buffers_type data(std::size_t pos, std::size_t n) const noexcept;
  void grow(std::size_t n);
  void shrink(std::size_t n) noexcept;
  void consume(std::size_t n) noexcept;

  // ---- reading in place
  const_iterator begin() const noexcept { return {rd_.data(), rd_.size(), 0}; }
  const_iterator end() const noexcept { return {rd_.data(), rd_.size(), size_}; }
  const_iterator iterator_at(std::size_t pos) const noexcept {
    return {rd_.data(), rd_.size(), pos < size_ ? pos : size_};
  }
  detail::span_range readable_spans() const noexcept { return {rd_.data(), rd_.size()}; }
  std::size_t find(char c, std::size_t from = 0) const noexcept {
    return detail::find_byte(rd_.data(), rd_.size(), size_, c, from);
  }
  std::size_t find(std::string_view pattern, std::size_t from = 0) const noexcept {
    // Fast path (inline): a search resumed after a read usually starts inside
    // the last readable piece, where it is one contiguous search.
    if (!rd_.empty() && from <= size_ && from >= size_ - rd_.back().n) {
      const detail::slice& b = rd_.back();
      const char* start = b.p + (from - (size_ - b.n));
      const char* hit = detail::find_in_piece(start, size_ - from, pattern.data(), pattern.size());
      return hit == nullptr ? npos : from + static_cast<std::size_t>(hit - start);
    }
    return detail::find_pattern(rd_.data(), rd_.size(), size_, pattern, from);
  }
  std::string_view peek(std::size_t pos, std::size_t n, std::span<char> scratch,
                        std::error_code& ec) const noexcept;

  // ---- handing bytes on
  // The first n readable bytes (clamped) leave the buffer as a segment.
  segment detach(std::size_t n);
  segment detach(const_iterator it) { return detach(it.position()); }
  // A segment of readable bytes [p, p + n), which must lie inside the readable
  // data (any fragments); the buffer keeps them. Empty segment + out_of_range
  // otherwise.
  segment slice(const char* p, std::size_t n, std::error_code& ec) const;
  segment slice(const char* p, std::size_t n) const {
    std::error_code ec;
    return slice(p, n, ec);
  }
  // A segment of readable bytes [pos, pos + n) (clamped); the buffer keeps them.
  segment sub(std::size_t pos, std::size_t n = npos) const;

  // ---- idle connections
  // When nothing is readable, gives every fragment (and heap slot storage)
  // back; returns true if the buffer now holds no memory at all.
  bool release_if_empty() noexcept;
  // When nothing is readable, gives back the writable fragments nobody else
  // refers to, but keeps the first writable piece when a segment still shares
  // its fragment (the bytes read before it, handed on by slice()/detach()):
  // keeping it costs nothing, and the next read continues beside those bytes
  // instead of taking a fresh fragment. A receiver waiting inside a message
  // calls this, so that reads of a few bytes each fill one fragment rather
  // than pin one each. Returns true if the buffer now holds no memory.
  bool release_spare() noexcept;
  // Does it hold any fragment?
  bool holds_memory() const noexcept { return !rd_.empty() || !wr_.empty(); }

 private:
  mutable_buffers_type prepare_slow(std::size_t n);
  void commit_slow(std::size_t n) noexcept;
  void rewind_if_possible() noexcept;
  void release_all() noexcept;
  void shrink_one(std::size_t k) noexcept;
  // Inline slice slots: a 64 KiB read prepares 8 fragments of 8 KiB, and
  // commit() needs a readable slot per writable piece, so 10 keeps a bulk
  // read off the heap (two 240-byte arrays; a receiver holds a streambuf only
  // while busy).
  static constexpr std::size_t slots = 10;

  pool* pool_;
  std::size_t max_size_;
  std::size_t size_ = 0;         // readable bytes
  std::size_t writable_ = 0;     // bytes in wr_
  detail::slice_vec<slots> rd_;  // readable pieces, one reference each
  detail::slice_vec<slots> wr_;  // writable pieces, one reference each
};

// The DynamicBuffer_v2 handle for Asio's composed operations; copies refer to
// the same streambuf, which must outlive the operation. Thread-safety and
// invalidation: those of the streambuf it refers to.
class streambuf_ref {
 public:
  using const_buffers_type = streambuf::const_buffers_type;
  using mutable_buffers_type = streambuf::mutable_buffers_type;

  explicit streambuf_ref(streambuf& b) noexcept : b_(&b) {}
  std::size_t size() const noexcept { return b_->size(); }
  std::size_t max_size() const noexcept { return b_->max_size(); }
  std::size_t capacity() const noexcept { return b_->capacity(); }
  const_buffers_type data(std::size_t pos, std::size_t n) const noexcept {
    return static_cast<const streambuf*>(b_)->data(pos, n);
  }
  mutable_buffers_type data(std::size_t pos, std::size_t n) noexcept { return b_->data(pos, n); }
  void grow(std::size_t n) { b_->grow(n); }
  void shrink(std::size_t n) noexcept { b_->shrink(n); }
  void consume(std::size_t n) noexcept { b_->consume(n); }
  streambuf& get() const noexcept { return *b_; }

 private:
  streambuf* b_;
};

inline streambuf_ref dynamic_buffer(streambuf& b) noexcept {
  return streambuf_ref(b);
}

}  // namespace inlet::buffer
