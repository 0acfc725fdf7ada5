// Mailpit's search language: tokenizer, term parser, dates in a zone, sizes, and the
// reference evaluation. See search.hpp for the language and store/DESIGN.md for where we
// differ from Mailpit.
#include "inlet/store/search.hpp"

#include <date/tz.h>

#include <algorithm>
#include <array>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <charconv>
#include <cstring>
#include <optional>
#include <span>

#include "inlet/store/error.hpp"

namespace inlet::store::search {
namespace {

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

// ASCII whitespace, as a table (build_search_text looks up every byte of a body).
constexpr std::array<bool, 256> space_byte = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : {' ', '\t', '\r', '\n', '\f', '\v'}) t[c] = true;
  return t;
}();

char ascii_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

// Lower case of a code point in U+0080..U+07FF, or the code point itself. Only mappings
// that stay inside that range (two UTF-8 bytes on both sides) are listed.
char32_t fold_two_byte(char32_t c) noexcept {
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;  // Latin-1 capitals
  if (c == 0x178) return 0xFF;                               // Y with diaeresis
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177))
    return (c & 1) == 0 ? c + 1 : c;  // Latin Extended-A, capital even
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
    return (c & 1) == 1 ? c + 1 : c;                            // ... capital odd
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 0x20;  // Greek capitals
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;                // Cyrillic capitals
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;                // Cyrillic Ѐ..Џ
  return c;
}

// Collapses whitespace runs to one space, trims, folds.
std::string clean(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  bool space = false;
  for (char c : v) {
    if (is_space(c)) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  fold_case_in_place(out);
  return out;
}

// Mailpit's argument splitting: whitespace separates arguments except inside double
// quotes; a quote toggles quoting anywhere in an argument and every quote is dropped.
// An unterminated quote runs to the end.
std::vector<std::string> split_args(std::string_view s) {
  std::vector<std::string> args;
  std::string cur;
  bool quoted = false;
  auto flush = [&] {
    std::size_t b = 0, e = cur.size();
    while (b < e && is_space(cur[b])) ++b;
    while (e > b && is_space(cur[e - 1])) --e;
    if (e > b) args.emplace_back(cur.substr(b, e - b));
    cur.clear();
  };
  for (char c : s) {
    if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && is_space(c)) {
      flush();
    } else {
      cur.push_back(c);
    }
  }
  flush();
  return args;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) noexcept {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (ascii_lower(s[i]) != prefix[i]) return false;
  return true;
}

bool equals_ci(std::string_view s, std::string_view lower) noexcept {
  return s.size() == lower.size() && starts_with_ci(s, lower);
}

// ---- sizes ----

// "10", "1.5M", "2 kb", "1G": bytes (1024-based, as Mailpit); nullopt when it does not read.
std::optional<std::uint64_t> parse_size(std::string_view v) {
  std::size_t i = 0;
  std::uint64_t whole = 0;
  const std::size_t digits_begin = i;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') {
    if (whole > (UINT64_MAX - 9) / 10) return std::nullopt;
    whole = whole * 10 + static_cast<std::uint64_t>(v[i++] - '0');
  }
  if (i == digits_begin) return std::nullopt;
  double frac = 0, scale = 0.1;
  if (i < v.size() && v[i] == '.') {
    ++i;
    const std::size_t fb = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') {
      frac += (v[i++] - '0') * scale;
      scale /= 10;
    }
    if (i == fb) return std::nullopt;
  }
  if (i < v.size() && v[i] == ' ') ++i;
  std::string unit;
  for (; i < v.size(); ++i) unit.push_back(ascii_lower(v[i]));
  std::uint64_t mult = 0;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kb")
    mult = 1024;
  else if (unit == "m" || unit == "mb")
    mult = 1024 * 1024;
  else if (unit == "g" || unit == "gb")
    mult = 1024ull * 1024 * 1024;
  else
    return std::nullopt;
  const double bytes = (static_cast<double>(whole) + frac) * static_cast<double>(mult);
  if (bytes >= 1.8e19) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

// ---- dates ----

// The zone for dates without an explicit offset: nullptr is UTC.
std::error_code resolve_zone(std::string_view tz, const date::time_zone*& out,
                             std::string* message) {
  out = nullptr;
  if (tz.empty() || equals_ci(tz, "utc") || tz == "Etc/UTC" || equals_ci(tz, "z")) return {};
  try {
    out = equals_ci(tz, "local") ? date::current_zone() : date::locate_zone(tz);
    return {};
  } catch (const std::exception&) {
    if (message)
      *message =
          "unknown time zone \"" + std::string(tz) + "\" (use an IANA name such as Europe/Berlin)";
    return errc::invalid_argument;
  }
}

struct date_reader {
  std::string_view s;
  std::size_t i = 0;
  bool eof() const noexcept { return i >= s.size(); }
  char peek() const noexcept { return eof() ? '\0' : s[i]; }
  // Reads 1..max digits into v; false if none.
  bool number(int& v, std::size_t min, std::size_t max) {
    std::size_t b = i;
    v = 0;
    while (!eof() && i - b < max && s[i] >= '0' && s[i] <= '9') v = v * 10 + (s[i++] - '0');
    return i - b >= min;
  }
  bool take(char c) {
    if (peek() != c) return false;
    ++i;
    return true;
  }
};

// Reads "HH:MM[:SS[.fff]]" then an optional zone ("Z", "UTC", "+HH:MM", "+HHMM", "-HH").
// Returns false on garbage. `offset` is set when the text names its own offset.
bool read_time(date_reader& r, std::chrono::seconds& tod,
               std::optional<std::chrono::minutes>& offset) {
  using namespace std::chrono;
  int h = 0, m = 0, sec = 0;
  if (!r.number(h, 1, 2) || !r.take(':') || !r.number(m, 2, 2)) return false;
  if (r.take(':')) {
    if (!r.number(sec, 2, 2)) return false;
    if (r.take('.') || r.take(',')) {
      int ignored;
      if (!r.number(ignored, 1, 9)) return false;
    }
  }
  if (h > 23 || m > 59 || sec > 60) return false;
  tod = hours(h) + minutes(m) + seconds(sec);
  r.take(' ');
  if (r.eof()) return true;
  std::string_view rest = r.s.substr(r.i);
  if (equals_ci(rest, "z") || equals_ci(rest, "utc") || equals_ci(rest, "gmt")) {
    offset = minutes(0);
    r.i = r.s.size();
    return true;
  }
  char sign = r.peek();
  if (sign != '+' && sign != '-') return false;
  ++r.i;
  int oh = 0, om = 0;
  if (!r.number(oh, 2, 2)) return false;
  r.take(':');
  if (!r.eof() && !r.number(om, 2, 2)) return false;
  if (!r.eof() || oh > 14 || om > 59) return false;
  offset = minutes((sign == '-' ? -1 : 1) * (oh * 60 + om));
  return true;
}

// Dates as people type them: 2024-04-01, 2024/04/01, 2024.04.01, 04/01/2024 (US order,
// as Mailpit), each optionally followed by " HH:MM[:SS]" or "THH:MM[:SS]" and a zone;
// or a Unix time in seconds (10 digits) or milliseconds (13 digits).
// 2200-12-31T23:59:59Z: the last second a date may name.
constexpr std::int64_t latest_seconds = 7289654399;

std::error_code parse_date(std::string_view v, std::string_view tz, time_point& out,
                           std::string* message) {
  using namespace std::chrono;
  auto fail = [&] {
    if (message)
      *message = "cannot read the date \"" + std::string(v) +
                 "\" (use YYYY-MM-DD, YYYY/MM/DD or YYYY-MM-DDTHH:MM[:SS], optionally with Z or "
                 "+HH:MM; years 1900 to 2200)";
    return make_error_code(errc::invalid_argument);
  };
  bool all_digits =
      !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (all_digits && (v.size() == 10 || v.size() == 13)) {
    std::int64_t n = 0;
    std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.size() == 13) n /= 1000;
    // The clock counts nanoseconds in 64 bits: years 1678-2262. Dates are kept to 1900-2200.
    if (n > latest_seconds) return fail();
    out = v.size() == 10 ? time_point(seconds(n))
                         : time_point(milliseconds(std::stoll(std::string(v))));
    return {};
  }
  date_reader r{v};
  int a = 0, b = 0, c = 0;
  std::size_t first_begin = r.i;
  if (!r.number(a, 1, 4)) return fail();
  const bool year_first = r.i - first_begin == 4;
  char sep = r.peek();
  if (sep != '-' && sep != '/' && sep != '.') return fail();
  ++r.i;
  if (!r.number(b, 1, 2) || !r.take(sep)) return fail();
  if (year_first ? !r.number(c, 1, 2) : !r.number(c, 4, 4)) return fail();
  const int y = year_first ? a : c, mo = year_first ? b : a, d = year_first ? c : b;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                           day{static_cast<unsigned>(d)}};
  if (!ymd.ok() || y < 1900 || y > 2200) return fail();
  seconds tod{0};
  std::optional<minutes> offset;
  if (!r.eof()) {
    if (!r.take('T') && !r.take('t') && !r.take(' ')) return fail();
    if (!read_time(r, tod, offset)) return fail();
  }
  if (offset) {
    out = time_point(sys_days(ymd) + tod - *offset);
    return {};
  }
  const date::time_zone* zone = nullptr;
  if (auto ec = resolve_zone(tz, zone, message)) return ec;
  const date::local_seconds local{sys_days(ymd).time_since_epoch() + tod};
  if (!zone) {
    out = time_point(local.time_since_epoch());
    return {};
  }
  // A local time skipped by a DST change counts from the change; a repeated one from
  // its first occurrence.
  out = time_point(zone->to_sys(local, date::choose::earliest));
  return {};
}

// ---- one argument ----

struct field_prefix {
  std::string_view prefix;
  field where;
};
constexpr field_prefix field_prefixes[] = {
    {"to:", field::to},
    {"from:", field::from},
    {"cc:", field::cc},
    {"bcc:", field::bcc},
    {"reply-to:", field::reply_to},
    {"addressed:", field::addressed},
    {"subject:", field::subject},
    {"message-id:", field::message_id},
    {"tag:", field::tag},
};

std::error_code parse_arg(std::string_view w, std::string_view tz, query& q, std::string* message) {
  term t;
  if (w.size() > 1 && (w[0] == '-' || w[0] == '!')) {
    t.negated = true;
    w.remove_prefix(1);
  }
  for (const auto& fp : field_prefixes) {
    if (!starts_with_ci(w, fp.prefix)) continue;
    t.value = clean(w.substr(fp.prefix.size()));
    if (fp.where == field::message_id && t.value.size() >= 2 && t.value.front() == '<' &&
        t.value.back() == '>')
      t.value = t.value.substr(1, t.value.size() - 2);
    if (t.value.empty()) return {};  // "to:" alone: ignored, as by Mailpit
    t.where = fp.where;
    q.terms.push_back(std::move(t));
    return {};
  }
  struct flag {
    std::string_view word;
    kind what;
  };
  static constexpr flag flags[] = {
      {"is:read", kind::is_read},
      {"is:unread", kind::is_unread},
      {"is:tagged", kind::is_tagged},
      {"has:attachment", kind::has_attachment},
      {"has:attachments", kind::has_attachment},
      {"has:inline", kind::has_inline},
      {"has:inlines", kind::has_inline},
  };
  for (const auto& f : flags) {
    if (!equals_ci(w, f.word)) continue;
    t.what = f.what;
    q.terms.push_back(std::move(t));
    return {};
  }
  auto value_of = [&](std::size_t n) {
    std::string v(w.substr(n));
    std::size_t b = 0, e = v.size();
    while (b < e && is_space(v[b])) ++b;
    while (e > b && is_space(v[e - 1])) --e;
    return v.substr(b, e - b);
  };
  if (starts_with_ci(w, "after:") || starts_with_ci(w, "before:")) {
    const bool after = starts_with_ci(w, "after:");
    std::string v = value_of(after ? 6 : 7);
    if (v.empty()) return {};
    t.what = after ? kind::after : kind::before;
    if (auto ec = parse_date(v, tz, t.when, message)) return ec;
    q.terms.push_back(std::move(t));
    return {};
  }
  if (starts_with_ci(w, "larger:") || starts_with_ci(w, "smaller:")) {
    const bool larger = starts_with_ci(w, "larger:");
    std::string v = value_of(larger ? 7 : 8);
    if (v.empty()) return {};
    auto n = parse_size(v);
    if (!n) {
      if (message)
        *message =
            "cannot read the size \"" + v + "\" (use a number of bytes, or K, M or G: 500K, 1.5M)";
      return errc::invalid_argument;
    }
    t.what = larger ? kind::larger : kind::smaller;
    t.bytes = *n;
    q.terms.push_back(std::move(t));
    return {};
  }
  t.value = clean(w);
  if (!t.value.empty()) q.terms.push_back(std::move(t));
  return {};
}

// ---- evaluation ----

// Substring test. With SSE2, 16 positions at a time: a position is a candidate when the
// needle's first and last bytes both match there, and only candidates are compared whole
// ("generic SIMD" substring search). glibc's memmem prepares the needle on every call,
// which a search over 100,000 short texts pays 100,000 times.
bool contains(std::string_view hay, std::string_view needle) noexcept {
  const std::size_t m = needle.size();
  if (m == 0) return true;
  if (hay.size() < m) return false;
#if defined(__SSE2__)
  if (m >= 2 && hay.size() >= m + 15) {
    const __m128i first = _mm_set1_epi8(needle.front());
    const __m128i last = _mm_set1_epi8(needle.back());
    const char* p = hay.data();
    const std::size_t stop = hay.size() - m + 1;  // candidate start positions [0, stop)
    std::size_t i = 0;
    for (; i + 16 <= stop; i += 16) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + m - 1));
      unsigned mask = static_cast<unsigned>(
          _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last))));
      while (mask) {
        const unsigned k = static_cast<unsigned>(__builtin_ctz(mask));
        if (std::memcmp(p + i + k + 1, needle.data() + 1, m - 2) == 0) return true;
        mask &= mask - 1;
      }
    }
    for (; i < stop; ++i)
      if (p[i] == needle.front() && std::memcmp(p + i + 1, needle.data() + 1, m - 1) == 0)
        return true;
    return false;
  }
#endif
  return ::memmem(hay.data(), hay.size(), needle.data(), needle.size()) != nullptr;
}

// a == b after folding a (b is folded already). Tags are short: no allocation (SSO).
bool folded_equals(std::string_view a, std::string_view b_folded) {
  if (a.size() != b_folded.size()) return false;
  std::string tmp(a);
  fold_case_in_place(tmp);
  return tmp == b_folded;
}

// An envelope address contains `value` (folded) once folded. Addresses are short: folded
// in a buffer kept per thread, so a search over every message does not allocate.
bool envelope_contains(std::string_view address, std::string_view value) {
  thread_local std::string folded;
  folded.assign(address);
  fold_case_in_place(folded);
  return contains(folded, value);
}

bool eval_field(field where, const std::string& value, const stored_message& m,
                const match_source& src) {
  switch (where) {
    case field::text:
      return contains(src.text(), value);
    case field::message_id:
      return src.fields().get(field::message_id) == value;
    case field::tag: {
      auto tags = m.tags();
      return std::any_of(tags->begin(), tags->end(),
                         [&](const std::string& tag) { return folded_equals(tag, value); });
    }
    case field::envelope_from:
      return envelope_contains(m.envelope.mail_from, value);
    case field::envelope_to:
      return std::any_of(m.envelope.rcpt_to.begin(), m.envelope.rcpt_to.end(),
                         [&](const auto& r) { return envelope_contains(r, value); });
    default:
      return contains(src.fields().get(where), value);
  }
}

bool eval(const term& t, const stored_message& m, const match_source& src) {
  switch (t.what) {
    case kind::is_read:
      return m.is_read();
    case kind::is_unread:
      return !m.is_read();
    case kind::is_tagged:
      return !m.tags()->empty();
    case kind::has_attachment:
      return !m.summary.attachments.empty();
    case kind::has_inline:
      return m.summary.inline_parts > 0;
    case kind::after:
      return m.created >= t.when;
    case kind::before:
      return m.created < t.when;
    case kind::larger:
      return m.size > t.bytes;
    case kind::smaller:
      return m.size < t.bytes;
    case kind::match:
      break;
  }
  if (eval_field(t.where, t.value, m, src)) return true;
  for (field f : t.also)
    if (eval_field(f, t.value, m, src)) return true;
  return false;
}

// Cheap terms first: flags and numbers, then header fields, then the body text.
int cost(const term& t) noexcept {
  if (t.what != kind::match) return 0;
  if (t.where == field::text) return 2;
  return std::find(t.also.begin(), t.also.end(), field::text) != t.also.end() ? 2 : 1;
}

void append_address(std::string& out, const address& a) {
  if (a.name.empty()) {
    out += a.address;
  } else {
    out += a.name;
    out += " <";
    out += a.address;
    out += '>';
  }
}

// Slot of each stored field in prepared_fields (to, from, cc, bcc, reply_to adjacent, so
// `addressed` is one span).
constexpr int slot_of(field f) noexcept {
  switch (f) {
    case field::to:
      return 0;
    case field::from:
      return 1;
    case field::cc:
      return 2;
    case field::bcc:
      return 3;
    case field::reply_to:
      return 4;
    case field::subject:
      return 5;
    case field::message_id:
      return 6;
    default:
      return -1;
  }
}

}  // namespace

std::error_code read_date(std::string_view text, std::string_view tz, time_point& out,
                          std::string* message) {
  return parse_date(text, tz, out, message);
}

// ---- public ----

void fold_case_in_place(std::string& s) noexcept {
  auto* p = reinterpret_cast<unsigned char*>(s.data());
  const std::size_t n = s.size();
  constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  std::size_t i = 0;
  while (i < n) {
    // Eight ASCII bytes at a time: a byte b < 0x80 is a capital when b + (0x80 - 'A')
    // has its high bit set and b + (0x7F - 'Z') has not; no sum carries into the next
    // byte. Capitals get 0x20 (the high bit shifted right twice).
    if (n - i >= 8) {
      std::uint64_t x;
      std::memcpy(&x, p + i, 8);
      if ((x & highs) == 0) {
        const std::uint64_t ge_a = x + (0x80 - 'A') * ones;
        const std::uint64_t gt_z = x + (0x7F - 'Z') * ones;
        x |= (ge_a & ~gt_z & highs) >> 2;
        std::memcpy(p + i, &x, 8);
        i += 8;
        continue;
      }
    }
    const unsigned char c = p[i];
    if (c < 0x80) {
      if (c >= 'A' && c <= 'Z') p[i] = static_cast<unsigned char>(c + 32);
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0 && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
      char32_t cp = (static_cast<char32_t>(c & 0x1F) << 6) | (p[i + 1] & 0x3F);
      char32_t lo = fold_two_byte(cp);
      if (lo != cp) {
        p[i] = static_cast<unsigned char>(0xC0 | (lo >> 6));
        p[i + 1] = static_cast<unsigned char>(0x80 | (lo & 0x3F));
      }
      i += 2;
      continue;
    }
    ++i;
  }
}

std::string fold_case(std::string_view s) {
  std::string out(s);
  fold_case_in_place(out);
  return out;
}

std::error_code parse(std::string_view text, std::string_view tz, query& out,
                      std::string* message) {
  query q;
  for (const auto& arg : split_args(text))
    if (auto ec = parse_arg(arg, tz, q, message)) return ec;
  out = std::move(q);
  return {};
}

prepared_fields::prepared_fields(const stored_message& m) {
  const auto& s = m.summary;
  std::size_t n = s.subject.size() + s.message_id.size() + 16;
  for (auto list : s.lists())
    for (const auto& a : list) n += a.name.size() + a.address.size() + 4;
  n += s.from.name.size() + s.from.address.size() + 4;
  buf_.reserve(n);
  // Each field is followed by '\n'; the addresses of a list are separated by '\n'.
  auto close = [&](int slot) {
    buf_ += '\n';
    end_[static_cast<std::size_t>(slot)] = static_cast<std::uint32_t>(buf_.size());
  };
  auto list = [&](std::span<const address> v, int slot) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) buf_ += '\n';
      append_address(buf_, v[i]);
    }
    close(slot);
  };
  list({s.to.data(), s.to.size()}, 0);
  if (!s.from.address.empty() || !s.from.name.empty()) append_address(buf_, s.from);
  close(1);
  list(s.cc, 2);
  list(s.bcc, 3);
  list(s.reply_to, 4);
  buf_ += s.subject;
  close(5);
  std::string_view id = s.message_id;
  if (id.size() >= 2 && id.front() == '<' && id.back() == '>') id = id.substr(1, id.size() - 2);
  buf_ += id;
  close(6);
  fold_case_in_place(buf_);
}

std::string_view prepared_fields::get(field f) const noexcept {
  if (f == field::addressed) return std::string_view(buf_).substr(0, end_[4]);
  const int slot = slot_of(f);
  if (slot < 0 || buf_.empty()) return {};
  const std::size_t b = slot == 0 ? 0 : end_[static_cast<std::size_t>(slot - 1)];
  const std::size_t e = end_[static_cast<std::size_t>(slot)] - 1;  // without the '\n'
  return std::string_view(buf_).substr(b, e - b);
}

bool matches(const query& q, const stored_message& m) {
  return matches(q, m, prepared_fields(m));
}

namespace {
// Prepared fields and the summary's own search text.
class summary_source final : public match_source {
 public:
  summary_source(const stored_message& m, const prepared_fields& f) : m_(m), f_(f) {}
  const prepared_fields& fields() const override { return f_; }
  std::string_view text() const override { return m_.summary.search_text; }

 private:
  const stored_message& m_;
  const prepared_fields& f_;
};
}  // namespace

bool matches(const query& q, const stored_message& m, const prepared_fields& f) {
  return matches(q, m, summary_source(m, f));
}

bool matches(const query& q, const stored_message& m, const match_source& src) {
  for (int pass = 0; pass <= 2; ++pass) {
    for (const auto& t : q.terms) {
      if (cost(t) != pass) continue;
      if (eval(t, m, src) == t.negated) return false;
    }
  }
  return true;
}

namespace {

// One byte of build_search_text: ASCII folded, a whitespace run collapsed to one space
// (none at the start), other control bytes kept.
inline char* append_byte(unsigned char c, char* begin, char* o, bool& non_ascii) {
  if (c > 0x20) {
    if (c >= 0x80) non_ascii = true;
    *o++ = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  } else if (!space_byte[c]) {
    *o++ = static_cast<char>(c);
  } else if (o != begin && o[-1] != ' ') {
    *o++ = ' ';
  }
  return o;
}

// Appends n bytes from p at o (o + n must be within the output), returns the new end.
// With SSE2, 16 bytes at a time: a block of printable ASCII and single spaces is folded
// and stored whole; at the first byte that is not (a CR LF, a double space, 8-bit text),
// the good prefix is kept and that byte goes through append_byte.
char* append_words(const unsigned char* p, std::size_t n, char* begin, char* o, bool& non_ascii) {
  const unsigned char* const e = p + n;
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(' ');
  const __m128i before_a = _mm_set1_epi8('A' - 1), after_z = _mm_set1_epi8('Z' + 1);
  const __m128i case_bit = _mm_set1_epi8(0x20);
  while (e - p >= 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Signed compares: bytes >= 0x80 are negative, so neither "printable" nor "space".
    const unsigned printable = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpgt_epi8(x, space)));
    const unsigned spaces = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, space)));
    // A space is bad when it follows a space (in the block, or the output's last byte).
    const unsigned prev_space = (spaces << 1) | (o != begin && o[-1] == ' ' ? 1u : 0u);
    const unsigned good = (printable | (spaces & ~prev_space)) & 0xFFFFu;
    const __m128i upper = _mm_and_si128(_mm_cmpgt_epi8(x, before_a), _mm_cmplt_epi8(x, after_z));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o),
                     _mm_or_si128(x, _mm_and_si128(upper, case_bit)));
    if (good == 0xFFFFu) {
      o += 16;
      p += 16;
      continue;
    }
    const unsigned k = static_cast<unsigned>(__builtin_ctz(~good));  // first bad byte
    o += k;
    p += k;
    do {  // the rest of a whitespace run (a CR LF) too, before the next block
      o = append_byte(*p++, begin, o, non_ascii);
    } while (p < e && *p <= 0x20);
  }
#endif
  while (p < e) o = append_byte(*p++, begin, o, non_ascii);
  return o;
}

}  // namespace

std::string build_search_text(const summary& s, std::string_view body_text, std::size_t limit) {
  std::string out;
  std::size_t want = s.subject.size() + body_text.size() + 2;
  for (auto list : s.lists())
    for (const auto& a : list) want += a.name.size() + a.address.size() + 2;
  want += s.from.name.size() + s.from.address.size() + 2;
  for (const auto& a : s.attachments) want += a.filename.size() + 1;
  out.resize(std::min(limit, want));
  char* const begin = out.data();
  char* const end = begin + out.size();
  char* o = begin;
  bool non_ascii = false;  // something the ASCII folding below did not cover
  // Appends `piece` with whitespace runs collapsed to one space and ASCII capitals folded
  // (this runs over the body of every received message, so it is the receive path's
  // largest per-byte cost after the parse). Output never outgrows input, so the room is
  // checked once per piece. See append_words for the fast path.
  auto add = [&](std::string_view piece) {
    if (o != begin && o[-1] != ' ' && o != end) *o++ = ' ';
    const std::size_t n = std::min(piece.size(), static_cast<std::size_t>(end - o));
    o = append_words(reinterpret_cast<const unsigned char*>(piece.data()), n, begin, o, non_ascii);
  };
  add(s.subject);
  auto add_addr = [&](const address& a) {
    add(a.name);
    add(a.address);
  };
  add_addr(s.from);
  for (auto list : s.lists())
    for (const auto& a : list) add_addr(a);
  add(body_text);
  for (const auto& a : s.attachments) add(a.filename);
  while (o != begin && o[-1] == ' ') --o;
  out.resize(static_cast<std::size_t>(o - begin));
  // Cut at a character boundary: drop a trailing partial UTF-8 sequence.
  if (out.size() >= limit) {
    std::size_t k = out.size();
    std::size_t cont = 0;
    while (k > 0 && (static_cast<unsigned char>(out[k - 1]) & 0xC0) == 0x80 && cont < 3) {
      --k;
      ++cont;
    }
    if (k > 0 && static_cast<unsigned char>(out[k - 1]) >= 0xC0) {
      unsigned char lead = static_cast<unsigned char>(out[k - 1]);
      std::size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
      if (cont + 1 < need) out.resize(k - 1);
    }
  }
  if (non_ascii) fold_case_in_place(out);  // ASCII is folded already
  return out;
}

}  // namespace inlet::store::search
