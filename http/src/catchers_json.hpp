// JSON text written straight into one string, for the catchers' message renderings
// (MailHog's data.Message holds the raw message and every part's body: tens of kilobytes
// per message). Building a boost::json tree first copied every body twice (a sanitised
// copy, the tree's copy) and its serialiser escaped byte by byte; here each string is
// validated as UTF-8 and escaped in one pass, 16 bytes at a time where nothing needs it.
//
// Strings come out as boost::json::serialize writes them (\" \\ \b \f \n \r \t, other
// control bytes as \u00xx), with every byte that is not part of valid UTF-8 replaced by
// U+FFFD, as sanitize_utf8 does: the same text the tree gave.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace inlet::http::detail {

/// Length of the valid UTF-8 sequence at p[0..n) (n > 0, p[0] >= 0x80), or 0.
inline std::size_t utf8_sequence(const unsigned char* p, std::size_t n) noexcept {
  const unsigned char c = p[0];
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c == 0xE0) {
    len = 3, lo = 0xA0;
  } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
    len = 3;
  } else if (c == 0xED) {
    len = 3, hi = 0x9F;  // no surrogates
  } else if (c == 0xF0) {
    len = 4, lo = 0x90;
  } else if (c >= 0xF1 && c <= 0xF3) {
    len = 4;
  } else if (c == 0xF4) {
    len = 4, hi = 0x8F;
  }
  if (len == 0 || len > n || p[1] < lo || p[1] > hi) return 0;
  for (std::size_t k = 2; k < len; ++k)
    if (p[k] < 0x80 || p[k] > 0xBF) return 0;
  return len;
}

/// Appends `s` as a JSON string (quotes included), made valid UTF-8.
inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  out.push_back('"');
  std::size_t i = 0;
  while (i < n) {
    // A run of bytes that go out as they are: printable ASCII but '"' and '\\'.
    std::size_t j = i;
    bool stopped = false;
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'),
                  backslash = _mm_set1_epi8('\\');
    for (; j + 16 <= n; j += 16) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + j));
      // Signed: bytes >= 0x80 are negative, so below 0x20 with the control bytes.
      const __m128i bad = _mm_or_si128(_mm_cmplt_epi8(x, space),
                                       _mm_or_si128(_mm_cmpeq_epi8(x, quote),
                                                    _mm_cmpeq_epi8(x, backslash)));
      const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(bad));
      if (mask) {
        j += static_cast<unsigned>(__builtin_ctz(mask));
        stopped = true;
        break;
      }
    }
#endif
    if (!stopped)
      while (j < n && p[j] >= 0x20 && p[j] < 0x80 && p[j] != '"' && p[j] != '\\') ++j;
    out.append(s.data() + i, j - i);
    i = j;
    if (i == n) break;
    const unsigned char c = p[i];
    if (c >= 0x80) {
      if (const std::size_t len = utf8_sequence(p + i, n - i)) {
        out.append(s.data() + i, len);
        i += len;
      } else {
        out.append("\xEF\xBF\xBD", 3);  // U+FFFD for one bad byte, then resync
        ++i;
      }
      continue;
    }
    // Escapes, with their lengths (no strlen); a CR LF pair is common enough in bodies
    // to be taken at once.
    if (c == '\r' && i + 1 < n && p[i + 1] == '\n') {
      out.append("\\r\\n", 4);
      i += 2;
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out.append("\\\"", 2);
        break;
      case '\\':
        out.append("\\\\", 2);
        break;
      case '\b':
        out.append("\\b", 2);
        break;
      case '\f':
        out.append("\\f", 2);
        break;
      case '\n':
        out.append("\\n", 2);
        break;
      case '\r':
        out.append("\\r", 2);
        break;
      case '\t':
        out.append("\\t", 2);
        break;
      default: {
        const char u[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        out.append(u, sizeof u);
      }
    }
  }
  out.push_back('"');
}

}  // namespace inlet::http::detail
