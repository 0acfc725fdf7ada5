#include <inlet/mime/decode.hpp>

#include "ascii.hpp"

#include <cerrno>
#include <cstring>
#include <iconv.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace inlet::mime {
namespace {

// ---- base64: four 256-entry tables give each character's 6 bits already shifted into
// place for a little-endian 3-byte store; any invalid character sets bit 24+.
constexpr std::uint32_t bad = 0xFF000000u;

struct b64_tables {
  std::uint32_t d[4][256];
  std::int8_t v[256];
};

constexpr b64_tables make_b64() {
  b64_tables t{};
  for (int i = 0; i < 256; ++i) {
    t.v[i] = -1;
    for (auto& d : t.d) d[i] = bad;
  }
  constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::uint32_t s = 0; s < 64; ++s) {
    auto c = static_cast<unsigned char>(alphabet[s]);
    t.v[c] = static_cast<std::int8_t>(s);
    t.d[0][c] = s << 2;
    t.d[1][c] = (s >> 4) | ((s & 0xF) << 12);
    t.d[2][c] = ((s >> 2) << 8) | ((s & 3) << 22);
    t.d[3][c] = s << 16;
  }
  return t;
}
constexpr b64_tables b64 = make_b64();

inline std::uint32_t quad(const unsigned char* p) noexcept {
  return b64.d[0][p[0]] | b64.d[1][p[1]] | b64.d[2][p[2]] | b64.d[3][p[3]];
}

// ---- quoted-printable
constexpr bool is_hex(char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
}
constexpr int hex_val(char c) noexcept {
  return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}
struct qp_table {
  bool special[256];
};
constexpr qp_table make_qp() {
  qp_table t{};
  for (bool& b : t.special) b = false;
  t.special[static_cast<unsigned char>('=')] = true;
  t.special[static_cast<unsigned char>('\r')] = true;
  t.special[static_cast<unsigned char>('\n')] = true;
  return t;
}
constexpr qp_table qp = make_qp();

struct hex_tab {
  std::int8_t v[256];
};
constexpr hex_tab make_hex() {
  hex_tab t{};
  for (int i = 0; i < 256; ++i) t.v[i] = is_hex(static_cast<char>(i)) ? static_cast<std::int8_t>(hex_val(static_cast<char>(i))) : -1;
  return t;
}
constexpr hex_tab hex_table = make_hex();

// High bit set in each byte of x equal to c, exact up to the first match (SWAR test;
// bits above the first match may be spurious, so only the lowest set bit is used).
constexpr std::uint64_t zero_bytes(std::uint64_t x, char c) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  std::uint64_t y = x ^ (ones * static_cast<unsigned char>(c));
  return (y - ones) & ~y & highs;
}

}  // namespace

std::size_t base64_decoder::decode_block(std::string_view in, char* out) noexcept {
  auto p = reinterpret_cast<const unsigned char*>(in.data());
  const auto e = p + in.size();
  char* o = out;
  for (;;) {
    if (n_ == 0) {
      while (e - p >= 8) {
        std::uint32_t x = quad(p), y = quad(p + 4);
        if ((x | y) & bad) break;
        std::memcpy(o, &x, 4);
        std::memcpy(o + 3, &y, 4);
        o += 6;
        p += 8;
      }
      while (e - p >= 4) {
        std::uint32_t x = quad(p);
        if (x & bad) break;
        std::memcpy(o, &x, 4);
        o += 3;
        p += 4;
      }
    }
    if (p == e) break;
    unsigned char c = *p++;
    int v = b64.v[c];
    if (v >= 0) {
      acc_ = (acc_ << 6) | static_cast<std::uint32_t>(v);
      if (++n_ == 4) {
        o[0] = static_cast<char>(acc_ >> 16);
        o[1] = static_cast<char>(acc_ >> 8);
        o[2] = static_cast<char>(acc_);
        o += 3;
        n_ = 0;
        acc_ = 0;
      }
    } else if (c == '=') {
      if (n_ == 1) bad_pad_ = true;
      o += flush_partial(o);  // '=' ends the quad
    } else if (!detail::is_ws(static_cast<char>(c))) {
      bad_chars_ = true;
    }
  }
  return static_cast<std::size_t>(o - out);
}

std::size_t base64_decoder::finish_block(char* out) noexcept {
  if (n_ != 0) bad_pad_ = true;  // missing padding
  return flush_partial(out);
}

std::size_t base64_decoder::flush_partial(char* out) noexcept {
  std::size_t n = 0;
  if (n_ == 2) {
    out[n++] = static_cast<char>(acc_ >> 4);
  } else if (n_ == 3) {
    out[n++] = static_cast<char>(acc_ >> 10);
    out[n++] = static_cast<char>(acc_ >> 2);
  }
  n_ = 0;
  acc_ = 0;
  return n;
}

char* qp_decoder::flush_ws(char* o) noexcept {
  if (ws_n_) {
    std::memcpy(o, ws_, ws_n_);
    o += ws_n_;
    ws_n_ = 0;
  }
  return o;
}

// Spaces and tabs are copied in the fast loop; at a line break, whitespace written since
// the last protected position (line start, '=' or a decoded =XX) is trimmed, as RFC 2045
// 6.7 (3) requires. Whitespace at the end of a block is held back in ws_ because the next
// block decides whether it was trailing.
std::size_t qp_decoder::decode_block(std::string_view in, char* out) noexcept {
  const char* p = in.data();
  const char* e = p + in.size();
  char* o = out;
  char* protect = out;
  auto trim = [&] {
    while (o > protect && (o[-1] == ' ' || o[-1] == '\t')) --o;
  };
  if (ws_n_ && st_ == st::normal && p < e && *p != '\r' && *p != '\n') o = flush_ws(o);
  while (p < e) {
    switch (st_) {
      case st::normal: {
        for (;;) {  // fast path: runs of literal bytes, complete escapes and line breaks
          bool hit = false;
#if defined(__SSE2__)
          while (e - p >= 16) {  // 16 bytes at a time (SSE2 is baseline on x86-64)
            __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
            __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('=')),
                                                  _mm_cmpeq_epi8(x, _mm_set1_epi8('\r'))),
                                     _mm_cmpeq_epi8(x, _mm_set1_epi8('\n')));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(o), x);
            if (int bits = _mm_movemask_epi8(m)) {
              auto k = static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(bits)));
              o += k;
              p += k;
              hit = true;
              break;
            }
            o += 16;
            p += 16;
          }
#endif
          while (!hit && e - p >= 8) {  // 8 bytes at a time; copy all, keep those before a special
            std::uint64_t x;
            std::memcpy(&x, p, 8);
            std::uint64_t m = zero_bytes(x, '=') | zero_bytes(x, '\r') | zero_bytes(x, '\n');
            std::memcpy(o, p, 8);
            if (m) {
              auto k = static_cast<std::size_t>(__builtin_ctzll(m) >> 3);
              o += k;
              p += k;
              hit = true;
              break;
            }
            o += 8;
            p += 8;
          }
          if (!hit)
            while (p < e && !qp.special[static_cast<unsigned char>(*p)]) *o++ = *p++;
          if (e - p < 3) break;
          if (p[0] == '=') {
            const int hi = hex_table.v[static_cast<unsigned char>(p[1])];
            const int lo = hex_table.v[static_cast<unsigned char>(p[2])];
            if ((hi | lo) >= 0) {
              *o++ = static_cast<char>(hi << 4 | lo);
            } else if (p[1] != '\r' || p[2] != '\n') {
              break;
            }
            p += 3;
            protect = o;
          } else if (p[0] == '\r' && p[1] == '\n') {
            trim();
            ws_n_ = 0;
            *o++ = '\r';
            *o++ = '\n';
            p += 2;
            protect = o;
          } else if (p[0] == '\n') {
            trim();
            ws_n_ = 0;
            *o++ = '\n';
            ++p;
            protect = o;
          } else {
            break;
          }
        }
        if (p == e) break;
        char c = *p++;
        if (c == '\n') {
          trim();
          ws_n_ = 0;
          *o++ = '\n';
          protect = o;
        } else if (c == '\r') {
          st_ = st::cr;
        } else {  // '='
          protect = o;
          st_ = st::eq;
        }
        break;
      }
      case st::cr:
        if (*p == '\n') {
          ++p;
          trim();
          ws_n_ = 0;
          *o++ = '\r';
          *o++ = '\n';
        } else {
          o = flush_ws(o);
          *o++ = '\r';
        }
        protect = o;
        st_ = st::normal;
        break;
      case st::eq:
        if (is_hex(*p)) {
          hex1_ = *p++;
          st_ = st::eq_hex;
        } else if (*p == '\n') {  // soft line break
          ++p;
          st_ = st::normal;
        } else if (*p == '\r') {
          ++p;
          st_ = st::eq_cr;
        } else {
          *o++ = '=';
          bad_ = true;
          st_ = st::normal;
        }
        protect = o;
        break;
      case st::eq_hex:
        if (is_hex(*p)) {
          *o++ = static_cast<char>(hex_val(hex1_) << 4 | hex_val(*p));
          ++p;
        } else {
          *o++ = '=';
          *o++ = hex1_;
          bad_ = true;
        }
        protect = o;
        st_ = st::normal;
        break;
      case st::eq_cr:
        if (*p == '\n') ++p;
        protect = o;
        st_ = st::normal;
        break;
    }
  }
  // Hold back unprotected trailing whitespace: only the next bytes tell if it is padding.
  if (st_ == st::normal || st_ == st::cr) {
    char* w = o;
    while (w > protect && (w[-1] == ' ' || w[-1] == '\t') && ws_n_ + static_cast<std::size_t>(o - w) < sizeof ws_) --w;
    if (w < o) {
      std::size_t k = static_cast<std::size_t>(o - w);
      if (ws_n_) {  // older held whitespace was already emitted before this block's bytes
        std::memmove(ws_ + ws_n_, w, k);
      } else {
        std::memcpy(ws_, w, k);
      }
      ws_n_ = static_cast<std::uint16_t>(ws_n_ + k);
      o = w;
    }
  }
  return static_cast<std::size_t>(o - out);
}

std::size_t qp_decoder::finish_block(char* out) noexcept {
  char* o = out;
  switch (st_) {
    case st::eq:
      *o++ = '=';
      bad_ = true;
      break;
    case st::eq_hex:
      *o++ = '=';
      *o++ = hex1_;
      bad_ = true;
      break;
    case st::cr:
      *o++ = '\r';
      break;
    default:
      break;
  }
  ws_n_ = 0;  // trailing whitespace at the end of the body is padding too
  st_ = st::normal;
  return static_cast<std::size_t>(o - out);
}

// ---- body_decoder --------------------------------------------------------------

namespace {
constexpr std::size_t chunk = 8192;
}

void body_decoder::feed(std::string_view in, text_sink sink) {
  if (enc_ != transfer_encoding::base64 && enc_ != transfer_encoding::quoted_printable) {
    if (!in.empty()) sink(in);
    return;
  }
  char buf[chunk + block_slack];
  while (!in.empty()) {
    std::string_view blk = in.substr(0, chunk);
    in.remove_prefix(blk.size());
    std::size_t n = enc_ == transfer_encoding::base64 ? b64_.decode_block(blk, buf)
                                                       : qp_.decode_block(blk, buf);
    if (n) sink({buf, n});
  }
}

void body_decoder::finish(text_sink sink) {
  char buf[block_slack];
  std::size_t n = 0;
  if (enc_ == transfer_encoding::base64) n = b64_.finish_block(buf);
  else if (enc_ == transfer_encoding::quoted_printable) n = qp_.finish_block(buf);
  if (n) sink({buf, n});
}

errc body_decoder::defect() const noexcept {
  if (enc_ == transfer_encoding::base64) {
    if (b64_.bad_padding()) return errc::invalid_base64_padding;
    if (b64_.bad_characters()) return errc::invalid_base64_characters;
  } else if (enc_ == transfer_encoding::quoted_printable && qp_.bad_sequences()) {
    return errc::invalid_quoted_printable;
  } else if (enc_ == transfer_encoding::unknown) {
    return errc::unknown_transfer_encoding;
  }
  return errc::ok;
}

std::string decode_base64(std::string_view in, bool* defect) {
  std::string out(in.size() + block_slack, '\0');
  base64_decoder d;
  std::size_t n = d.decode_block(in, out.data());
  n += d.finish_block(out.data() + n);
  out.resize(n);
  if (defect) *defect = d.bad_padding() || d.bad_characters();
  return out;
}

std::string decode_quoted_printable(std::string_view in, bool* defect) {
  std::string out(in.size() + block_slack, '\0');
  qp_decoder d;
  std::size_t n = d.decode_block(in, out.data());
  n += d.finish_block(out.data() + n);
  out.resize(n);
  if (defect) *defect = d.bad_sequences();
  return out;
}

// ---- charsets ----------------------------------------------------------------------

std::string canonical_charset(std::string_view label) {
  // The labels nearly every message carries, without building the lower-cased copy.
  if (detail::iequals(label, "utf-8") || detail::iequals(label, "us-ascii")) return {};
  std::string l;
  for (char c : detail::trim(label))
    if (c != '"' && c != '\'') l.push_back(detail::ascii_lower(c));
  if (auto star = l.find('*'); star != std::string::npos) l.resize(star);  // RFC 2231 language
  static constexpr std::pair<std::string_view, std::string_view> aliases[] = {
      {"", ""}, {"us-ascii", ""}, {"ascii", ""}, {"us_ascii", ""}, {"ansi_x3.4-1968", ""},
      {"utf-8", ""}, {"utf8", ""}, {"unicode-1-1-utf-8", ""}, {"x-unknown", ""},
      {"unknown", ""}, {"unknown-8bit", ""}, {"default", ""}, {"x-user-defined", ""},
      {"ks_c_5601-1987", "CP949"}, {"ks_c_5601", "CP949"}, {"ksc5601", "CP949"},
      {"ksc_5601", "CP949"}, {"euc-kr", "CP949"}, {"x-euc-kr", "CP949"},
      {"x-sjis", "CP932"}, {"shift-jis", "CP932"}, {"shift_jis", "CP932"}, {"sjis", "CP932"},
      {"ms_kanji", "CP932"}, {"windows-31j", "CP932"}, {"x-euc-jp", "EUC-JP"},
      {"gb2312", "GB18030"}, {"gbk", "GB18030"}, {"x-gbk", "GB18030"}, {"euc-cn", "GB18030"},
      {"cp936", "GB18030"}, {"chinese", "GB18030"}, {"x-gb2312", "GB18030"},
      {"big5", "CP950"}, {"x-big5", "CP950"}, {"big-5", "CP950"},
      {"iso-8859-8-i", "ISO-8859-8"}, {"iso-8859-6-i", "ISO-8859-6"},
      {"windows-874", "CP874"}, {"unicode-1-1-utf-7", "UTF-7"}, {"x-mac-roman", "MACINTOSH"},
      {"latin-1", "ISO-8859-1"}, {"x-iso-8859-1", "ISO-8859-1"}, {"iso8859-15", "ISO-8859-15"},
      {"utf-16", "UTF-16"}, {"cp-1252", "CP1252"}, {"x-cp1252", "CP1252"},
  };
  for (auto [k, v] : aliases)
    if (l == k) return std::string(v);
  for (char& c : l) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  return l;
}

namespace {
constexpr std::string_view replacement = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence at s[i], 0 if invalid, -1 if truncated at the end.
int utf8_seq(std::string_view s, std::size_t i) noexcept {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  int n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int k = 1; k < n; ++k) {
    if (i + k >= s.size()) return -1;
    unsigned char d = b(i + k);
    if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) return 0;
  }
  return n;
}
}  // namespace

charset_converter::charset_converter(std::string_view charset) {
  std::string name = canonical_charset(charset);
  if (name.empty()) return;
  iconv_t cd = iconv_open("UTF-8", name.c_str());
  if (cd == reinterpret_cast<iconv_t>(-1)) {
    known_ = false;
    return;
  }
  cd_ = cd;
}

charset_converter::~charset_converter() {
  if (cd_) iconv_close(static_cast<iconv_t>(cd_));
}

void charset_converter::feed(std::string_view in, text_sink sink) { convert(in, false, sink); }

void charset_converter::finish(text_sink sink) {
  convert({}, true, sink);
  if (cd_) {
    char buf[64];
    char* op = buf;
    std::size_t ol = sizeof buf;
    iconv(static_cast<iconv_t>(cd_), nullptr, nullptr, &op, &ol);
    if (op != buf) sink({buf, static_cast<std::size_t>(op - buf)});
  }
}

void charset_converter::convert(std::string_view in, bool at_end, text_sink sink) {
  std::string joined;
  if (!carry_.empty()) {
    joined = std::move(carry_);
    joined.append(in);
    carry_.clear();
    in = joined;
  }
  if (!cd_) {  // UTF-8 (or assumed UTF-8): validate, replace what is invalid
    std::size_t start = 0, i = 0;
    while (i < in.size()) {
      // ASCII fast path: 8 bytes per step while none has its high bit set (most mail text).
      while (i + 8 <= in.size()) {
        std::uint64_t w;
        std::memcpy(&w, in.data() + i, 8);
        if (w & 0x8080808080808080ull) break;
        i += 8;
      }
      if (i >= in.size()) break;
      int n = utf8_seq(in, i);
      if (n > 0) {
        i += static_cast<std::size_t>(n);
        continue;
      }
      if (i > start) sink(in.substr(start, i - start));
      if (n < 0 && !at_end) {
        carry_.assign(in.substr(i));
        return;
      }
      sink(replacement);
      invalid_ = true;
      start = ++i;
    }
    if (i > start) sink(in.substr(start, i - start));
    return;
  }
  auto cd = static_cast<iconv_t>(cd_);
  char buf[4096];
  char* ip = const_cast<char*>(in.data());
  std::size_t il = in.size();
  while (il > 0) {
    char* op = buf;
    std::size_t ol = sizeof buf;
    std::size_t r = iconv(cd, &ip, &il, &op, &ol);
    int err = errno;
    if (op != buf) sink({buf, static_cast<std::size_t>(op - buf)});
    if (r != static_cast<std::size_t>(-1)) break;
    if (err == E2BIG) continue;
    if (err == EINVAL && !at_end) {
      carry_.assign(ip, il);
      return;
    }
    sink(replacement);  // EILSEQ, or a truncated sequence at the end
    invalid_ = true;
    ++ip;
    --il;
  }
}

std::string to_utf8(std::string_view bytes, std::string_view charset) {
  std::string out;
  charset_converter cv(charset);
  auto append = [&](std::string_view s) { out.append(s); };
  cv.feed(bytes, append);
  cv.finish(append);
  return out;
}

}  // namespace inlet::mime
