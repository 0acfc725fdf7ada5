// Search across slices: memchr/memmem inside a slice (the inline fast path),
// candidates that straddle a boundary checked apart (the slow path).
#include <inlet/buffer/detail/iterator.hpp>

#include <cstring>

namespace inlet::buffer::detail {
namespace {

constexpr std::size_t npos = static_cast<std::size_t>(-1);

// Does pat match starting at byte `off` of slice i (continuing into later slices)?
bool matches_at(const slice* s, std::size_t count, std::size_t i, std::size_t off,
                std::string_view pat) noexcept {
  std::size_t done = 0;
  while (done < pat.size()) {
    if (i == count) return false;
    std::size_t take = std::min(s[i].n - off, pat.size() - done);
    if (std::memcmp(s[i].p + off, pat.data() + done, take) != 0) return false;
    done += take;
    ++i;
    off = 0;
  }
  return true;
}

// Slice index and offset of position `from`; false when from > total size.
bool locate(const slice* s, std::size_t count, std::size_t from, std::size_t* idx,
            std::size_t* off, std::size_t* base) noexcept {
  std::size_t b = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (from < b + s[i].n) {
      *idx = i;
      *off = from - b;
      *base = b;
      return true;
    }
    b += s[i].n;
  }
  return false;
}

}  // namespace

std::size_t find_byte(const slice* s, std::size_t count, char c, std::size_t from) noexcept {
  std::size_t i, off, base;
  if (!locate(s, count, from, &i, &off, &base)) return npos;
  for (; i < count; ++i) {
    const void* hit = std::memchr(s[i].p + off, c, s[i].n - off);
    if (hit != nullptr) return base + static_cast<std::size_t>(static_cast<const char*>(hit) - s[i].p);
    base += s[i].n;
    off = 0;
  }
  return npos;
}

std::size_t find_pattern(const slice* s, std::size_t count, std::string_view pat,
                         std::size_t from) noexcept {
  const std::size_t m = pat.size();
  if (m == 0) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < count; ++i) total += s[i].n;
    return from <= total ? from : npos;
  }
  if (m == 1) return find_byte(s, count, pat[0], from);
  std::size_t i, off, base;
  if (!locate(s, count, from, &i, &off, &base)) return npos;
  for (; i < count; ++i) {
    const char* p = s[i].p;
    const std::size_t n = s[i].n;
    // Matches wholly inside this slice.
    if (n - off >= m) {
      const void* hit = ::memmem(p + off, n - off, pat.data(), m);
      if (hit != nullptr) return base + static_cast<std::size_t>(static_cast<const char*>(hit) - p);
    }
    // Matches that start in this slice's last m-1 bytes and run into the next.
    std::size_t st = n - off >= m ? n - (m - 1) : off;
    while (st < n) {
      const void* c = std::memchr(p + st, pat[0], n - st);
      if (c == nullptr) break;
      st = static_cast<std::size_t>(static_cast<const char*>(c) - p);
      if (matches_at(s, count, i, st, pat)) return base + st;
      ++st;
    }
    base += n;
    off = 0;
  }
  return npos;
}

}  // namespace inlet::buffer::detail
