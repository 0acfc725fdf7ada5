// Search across slices: SIMD filter + memcmp inside a slice (the inline fast path),
// candidates that straddle a boundary checked apart (the slow path).
#include <inlet/buffer/detail/iterator.hpp>
#include <inlet/buffer/find.hpp>

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define INLET_BUFFER_X86 1
#endif

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

// Slice index, offset and base (position of the slice's first byte) of
// position `from`; false when from >= total. Walks from the nearer end: a
// resumed search starts a few bytes before the end, so this is O(1) there.
bool locate(const slice* s, std::size_t count, std::size_t total, std::size_t from,
            std::size_t* idx, std::size_t* off, std::size_t* base) noexcept {
  if (from >= total) return false;
  if (from >= total / 2) {
    std::size_t i = count - 1;
    std::size_t b = total - s[i].n;
    while (from < b) b -= s[--i].n;
    *idx = i;
    *off = from - b;
    *base = b;
    return true;
  }
  std::size_t b = 0;
  for (std::size_t i = 0;; ++i) {
    if (from < b + s[i].n) {
      *idx = i;
      *off = from - b;
      *base = b;
      return true;
    }
    b += s[i].n;
  }
}

}  // namespace

namespace {
#if defined(INLET_BUFFER_X86)
// 32 positions at a time; compiled for AVX2 and used only when the CPU has it.
__attribute__((target("avx2"))) std::size_t scan_avx2(const char* h, std::size_t n, const char* pat,
                                                      std::size_t m, const char** hit) noexcept {
  const __m256i first = _mm256_set1_epi8(pat[0]);
  const __m256i last = _mm256_set1_epi8(pat[m - 1]);
  std::size_t i = 0;
  for (; i + m - 1 + 32 <= n; i += 32) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i + m - 1));
    unsigned mask = static_cast<unsigned>(
        _mm256_movemask_epi8(_mm256_and_si256(_mm256_cmpeq_epi8(a, first), _mm256_cmpeq_epi8(b, last))));
    while (mask != 0) {
      unsigned bit = static_cast<unsigned>(__builtin_ctz(mask));
      if (m == 2 || std::memcmp(h + i + bit + 1, pat + 1, m - 2) == 0) {
        *hit = h + i + bit;
        return i;
      }
      mask &= mask - 1;
    }
  }
  // The last positions: one more block that ends exactly at the last start
  // position, with the starts already checked masked off.
  const std::size_t starts = n - m + 1;
  if (i < starts && starts >= 32) {
    const std::size_t j = starts - 32;
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + j));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + j + m - 1));
    unsigned mask = static_cast<unsigned>(_mm256_movemask_epi8(_mm256_and_si256(_mm256_cmpeq_epi8(a, first), _mm256_cmpeq_epi8(b, last))));
    mask &= ~((1u << (i - j)) - 1u);  // i > j: the main loop ran to here
    while (mask != 0) {
      unsigned bit = static_cast<unsigned>(__builtin_ctz(mask));
      if (m == 2 || std::memcmp(h + j + bit + 1, pat + 1, m - 2) == 0) {
        *hit = h + j + bit;
        return starts;
      }
      mask &= mask - 1;
    }
    return starts;
  }
  return i;
}

// 16 positions at a time (SSE2 is part of x86-64).
std::size_t scan_sse2(const char* h, std::size_t n, const char* pat, std::size_t m,
                      const char** hit) noexcept {
  const __m128i first = _mm_set1_epi8(pat[0]);
  const __m128i last = _mm_set1_epi8(pat[m - 1]);
  std::size_t i = 0;
  for (; i + m - 1 + 16 <= n; i += 16) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i + m - 1));
    unsigned mask = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last))));
    while (mask != 0) {
      unsigned bit = static_cast<unsigned>(__builtin_ctz(mask));
      if (m == 2 || std::memcmp(h + i + bit + 1, pat + 1, m - 2) == 0) {
        *hit = h + i + bit;
        return i;
      }
      mask &= mask - 1;
    }
  }
  // The last positions: one more block that ends exactly at the last start
  // position, with the starts already checked masked off.
  const std::size_t starts = n - m + 1;
  if (i < starts && starts >= 16) {
    const std::size_t j = starts - 16;
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + j));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + j + m - 1));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last))));
    mask &= ~((1u << (i - j)) - 1u);  // i > j: the main loop ran to here
    while (mask != 0) {
      unsigned bit = static_cast<unsigned>(__builtin_ctz(mask));
      if (m == 2 || std::memcmp(h + j + bit + 1, pat + 1, m - 2) == 0) {
        *hit = h + j + bit;
        return starts;
      }
      mask &= mask - 1;
    }
    return starts;
  }
  return i;
}

using scan_fn = std::size_t (*)(const char*, std::size_t, const char*, std::size_t, const char**) noexcept;
const scan_fn scan_block = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? scan_avx2 : scan_sse2;
}();
#endif
}  // namespace

// Substring search inside one contiguous piece: compare 32 (AVX2) or 16
// (SSE2) positions at once against the pattern's first and last bytes and
// memcmp only where both match (W. Mula's "generic SIMD" method). For mail
// text and "\r\n.\r\n" a candidate needs a 3-byte line, so nearly every
// block is rejected at once. The last positions are done with memchr.
const char* find_in_piece(const char* h, std::size_t n, const char* pat, std::size_t m) noexcept {
  if (m == 0) return h;
  if (n < m) return nullptr;
  if (m == 1) return static_cast<const char*>(std::memchr(h, pat[0], n));
  std::size_t i = 0;
#if defined(INLET_BUFFER_X86)
  const char* hit = nullptr;
  i = scan_block(h, n, pat, m, &hit);
  if (hit != nullptr) return hit;
#endif
  for (; i + m <= n; ++i) {
    const void* c = std::memchr(h + i, pat[0], n - m + 1 - i);
    if (c == nullptr) return nullptr;
    i = static_cast<std::size_t>(static_cast<const char*>(c) - h);
    if (std::memcmp(h + i + 1, pat + 1, m - 1) == 0) return h + i;
  }
  return nullptr;
}

#if defined(INLET_BUFFER_X86)
// The SSE2 path, for tests on machines that would pick AVX2.
const char* find_in_piece_sse2(const char* h, std::size_t n, const char* pat, std::size_t m) noexcept {
  if (m < 2 || n < m) return find_in_piece(h, n, pat, m);
  const char* hit = nullptr;
  std::size_t i = scan_sse2(h, n, pat, m, &hit);
  if (hit != nullptr) return hit;
  for (; i + m <= n; ++i)
    if (std::memcmp(h + i, pat, m) == 0) return h + i;
  return nullptr;
}
#endif

std::size_t find_byte(const slice* s, std::size_t count, std::size_t total, char c,
                      std::size_t from) noexcept {
  std::size_t i, off, base;
  if (!locate(s, count, total, from, &i, &off, &base)) return npos;
  for (; i < count; ++i) {
    const void* hit = std::memchr(s[i].p + off, c, s[i].n - off);
    if (hit != nullptr) return base + static_cast<std::size_t>(static_cast<const char*>(hit) - s[i].p);
    base += s[i].n;
    off = 0;
  }
  return npos;
}

std::size_t find_pattern(const slice* s, std::size_t count, std::size_t total,
                         std::string_view pat, std::size_t from) noexcept {
  const std::size_t m = pat.size();
  if (m == 0) return from <= total ? from : npos;
  if (m == 1) return find_byte(s, count, total, pat[0], from);
  if (from >= total || total - from < m) return npos;
  std::size_t i, off, base;
  if (!locate(s, count, total, from, &i, &off, &base)) return npos;
  for (; i < count; ++i) {
    const char* p = s[i].p;
    const std::size_t n = s[i].n;
    // Matches wholly inside this slice.
    if (n - off >= m) {
      const char* hit = find_in_piece(p + off, n - off, pat.data(), m);
      if (hit != nullptr) return base + static_cast<std::size_t>(hit - p);
    }
    // Matches that start in this slice's last m-1 bytes and run into the next
    // (none after the last slice).
    if (i + 1 == count) break;
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

namespace inlet::buffer {
std::size_t find_in(std::string_view hay, std::string_view pattern, std::size_t from) noexcept {
  if (from > hay.size()) return finder::npos;
  const char* hit = detail::find_in_piece(hay.data() + from, hay.size() - from, pattern.data(), pattern.size());
  return hit == nullptr ? finder::npos : static_cast<std::size_t>(hit - hay.data());
}
}  // namespace inlet::buffer
