#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <inlet/mime/decode.hpp>
#include <inlet/mime/fields.hpp>
#include <map>
#include <span>

#include "ascii.hpp"

namespace inlet::mime {
namespace {

using detail::iequals;
using detail::is_ws;
using detail::ascii_lower;

std::string valid_utf8(std::string_view s) {
  // ASCII (most header text) is valid as it is: no converter to set up.
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (w & 0x8080808080808080ull) return to_utf8(s, "utf-8");
  }
  for (; i < s.size(); ++i)
    if (static_cast<unsigned char>(s[i]) >= 0x80) return to_utf8(s, "utf-8");
  return std::string(s);
}

// Replaces every line break with nothing (folds keep their whitespace). Most fields are
// one line: then the field itself is returned and `buf` is not touched (two vectorised
// scans, no copy); else the unfolded bytes are put in `buf`.
std::string_view unfold_raw(std::string_view raw, std::string& buf) {
  if (raw.empty()) return {};  // (memchr must not see the null data() of an empty view)
  if (std::memchr(raw.data(), '\n', raw.size()) == nullptr &&
      std::memchr(raw.data(), '\r', raw.size()) == nullptr)
    return raw;
  buf.clear();
  buf.reserve(raw.size());
  // Runs between line breaks are copied whole: a folded field has one break per line.
  const char* p = raw.data();
  const char* const end = p + raw.size();
  while (p < end) {
    const void* lf = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
    const char* stop = lf ? static_cast<const char*>(lf) : end;
    const void* cr = std::memchr(p, '\r', static_cast<std::size_t>(stop - p));
    const char* q = cr ? static_cast<const char*>(cr) : stop;  // the first CR or LF, or end
    buf.append(p, static_cast<std::size_t>(q - p));
    p = q + (q < end ? 1 : 0);
  }
  return buf;
}

// The length of the RFC 2047 encoded word at s[i] ("=?charset?B|Q?text?="), 0 when
// there is none. The text is at most 2,000 bytes, so the search for its end is bounded
// too: a long field of "=?x?q?" openings never closed costs a linear scan, not a
// quadratic one.
std::size_t encoded_word_length(std::string_view s, std::size_t i) noexcept {
  const std::size_t n = s.size();
  if (i + 1 >= n || s[i] != '=' || s[i + 1] != '?') return 0;
  // One pass each over the charset and the text (words are short: no memchr set-up).
  std::size_t q1 = i + 2;
  for (; q1 < n && s[q1] != '?'; ++q1)
    if (is_ws(s[q1])) return 0;
  if (q1 >= n || q1 == i + 2 || q1 + 2 >= n || s[q1 + 2] != '?') return 0;
  const char enc = ascii_lower(s[q1 + 1]);
  if (enc != 'b' && enc != 'q') return 0;
  constexpr std::size_t max_text = 2000;
  const std::size_t tb = q1 + 3;
  for (std::size_t k = tb; k + 1 < n && k <= tb + max_text; ++k) {
    if (s[k] == '?' && s[k + 1] == '=') return k + 2 - i;
    if (s[k] == ' ' || s[k] == '\t') return 0;
  }
  return 0;
}

// An RFC 2047 encoded word at s[i]. On success fills the charset and decoded bytes and
// returns its length; 0 when it is not one.
std::size_t encoded_word(std::string_view s, std::size_t i, std::string& charset,
                         std::string& bytes) {
  const std::size_t len = encoded_word_length(s, i);
  if (len == 0) return 0;
  const std::size_t q1 = s.find('?', i + 2);
  const std::size_t tb = q1 + 3, te = i + len - 2;
  const char enc = ascii_lower(s[q1 + 1]);
  std::string_view text = s.substr(tb, te - tb);
  charset.assign(s.substr(i + 2, q1 - i - 2));
  if (enc == 'b') {
    bytes = decode_base64(text);
  } else {
    bytes.clear();
    for (std::size_t k = 0; k < text.size(); ++k) {
      char c = text[k];
      auto hex = [](char h) {
        return (h >= '0' && h <= '9') || ((h | 0x20) >= 'a' && (h | 0x20) <= 'f');
      };
      auto val = [](char h) { return h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10; };
      if (c == '_')
        bytes.push_back(' ');
      else if (c == '=' && k + 2 < text.size() + 0 && hex(text[k + 1]) && hex(text[k + 2])) {
        bytes.push_back(static_cast<char>(val(text[k + 1]) << 4 | val(text[k + 2])));
        k += 2;
      } else
        bytes.push_back(c);
    }
  }
  return te + 2 - i;
}

// Decodes encoded words inside `s` (already unfolded); other bytes pass as UTF-8.
std::string decode_words(std::string_view s) {
  // No encoded word: the text as valid UTF-8, without the copy through `out`.
  if (s.find("=?") == std::string_view::npos) return valid_utf8(s);
  std::string out, pending, pending_cs, ws, cs, bytes;
  bool have = false;
  auto flush = [&] {
    if (have) out += to_utf8(pending, pending_cs);
    have = false;
    pending.clear();
  };
  std::size_t i = 0, lit = 0;  // lit: start of the pending literal run
  auto flush_lit = [&](std::size_t end) {
    if (end > lit) out += valid_utf8(s.substr(lit, end - lit));
  };
  while (i < s.size()) {
    std::size_t n = s[i] == '=' ? encoded_word(s, i, cs, bytes) : 0;
    if (n) {
      flush_lit(i);
      if (have && canonical_charset(cs) == canonical_charset(pending_cs)) {
        pending += bytes;  // whitespace between adjacent encoded words is dropped
      } else {
        flush();
        out += ws;
        pending = bytes;
        pending_cs = cs;
        have = true;
      }
      ws.clear();
      i += n;
      lit = i;
      continue;
    }
    if (have && (s[i] == ' ' || s[i] == '\t')) {
      ws.push_back(s[i++]);
      lit = i;
      continue;
    }
    if (have) {
      flush();
      out += ws;
      ws.clear();
      lit = i;
    }
    ++i;
  }
  flush_lit(i);
  flush();
  out += ws;
  return out;
}

std::string collapse_ws(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (is_ws(c)) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string unfold(std::string_view raw) {
  std::string buf;
  return valid_utf8(detail::trim(unfold_raw(raw, buf)));
}

std::string decode_unstructured(std::string_view raw) {
  std::string buf;
  const std::string_view u = unfold_raw(raw, buf);
  return decode_words(detail::trim(u));
}

// ---- addresses ---------------------------------------------------------------------

namespace {

constexpr bool is_addr_special(char c) noexcept {
  switch (c) {
    case '(':
    case ')':
    case '<':
    case '>':
    case '[':
    case ']':
    case ':':
    case ';':
    case '@':
    case '\\':
    case ',':
    case '"':
      return true;
    default:
      return is_ws(c);
  }
}

constexpr bool is_atext_local(char c) noexcept {
  return !is_addr_special(c) && static_cast<unsigned char>(c) > 32;
}

struct addr_parser {
  std::string_view s;
  std::size_t i = 0;
  std::vector<mailbox>& out;
  bool defect = false;
  // Past `keep` entries an address is walked (the list's syntax still decides where
  // it ends) but not decoded or stored, only counted (count_address): a To: of 80,000
  // addresses costs a scan, not 80,000 charset conversions and strings.
  std::size_t keep = static_cast<std::size_t>(-1);
  std::size_t dropped = 0;

  bool keeping() const noexcept { return out.size() < keep; }

  void skip_cfws() {
    detail::lexer lx{s, i};
    lx.skip_cfws();
    i = lx.i;
  }

  // Words separated by spaces in an addr-spec ("Undisclosed Recipients@x"): the local
  // part is quoted, as Python does.
  std::string quote_local(const std::string& a) {
    std::size_t at = a.rfind('@');
    std::string local = a.substr(0, at == std::string::npos ? a.size() : at);
    if (local.find(' ') == std::string::npos || local.front() == '"') return a;
    defect = true;
    return "\"" + local + "\"" + (at == std::string::npos ? std::string{} : a.substr(at));
  }

  // Quoted string at s[i]: returns the unescaped content.
  std::string quoted() {
    std::string v;
    ++i;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      v.push_back(s[i++]);
    }
    if (i < s.size())
      ++i;
    else
      defect = true;
    return v;
  }

  // Everything up to the matching '>', CFWS removed, obs-route dropped.
  std::string angle() {
    ++i;
    std::string a;
    bool space = false;
    while (i < s.size() && s[i] != '>') {
      char c = s[i];
      if (c == '"') {
        std::string q = quoted();
        bool plain = !q.empty() && std::all_of(q.begin(), q.end(), [](char ch) {
          return is_atext_local(ch) || ch == '.';
        });
        a += plain ? q : "\"" + q + "\"";
      } else if (c == '(' || is_ws(c)) {
        skip_cfws();
        space = true;
      } else {
        if (space && !a.empty() && a.back() != '.' && a.back() != '@' && a.back() != ':' &&
            c != '.' && c != '@')
          a.push_back(' ');
        space = false;
        // The run up to the next quote, comment, space or '>' goes in whole.
        std::size_t j = i + 1;
        while (j < s.size() && s[j] != '>' && s[j] != '"' && s[j] != '(' && !is_ws(s[j])) ++j;
        a.append(s.substr(i, j - i));
        i = j;
      }
    }
    if (i < s.size())
      ++i;
    else
      defect = true;
    if (!a.empty() && a[0] == '@') {  // obs-route: @a,@b:addr
      auto colon = a.find(':');
      a = colon == std::string::npos ? std::string{} : a.substr(colon + 1);
    }
    return quote_local(a);
  }

  // angle()'s walk without building the address: for an address that is only counted.
  void skip_angle() {
    ++i;
    while (i < s.size() && s[i] != '>') {
      if (s[i] == '"') {
        ++i;
        while (i < s.size() && s[i] != '"') i += (s[i] == '\\' && i + 1 < s.size()) ? 2 : 1;
        if (i < s.size())
          ++i;
        else
          defect = true;
      } else if (s[i] == '(' || is_ws(s[i])) {
        skip_cfws();
      } else {
        ++i;
      }
    }
    if (i < s.size())
      ++i;
    else
      defect = true;
  }

  // One address (a mailbox, or a group whose members go to `out`).
  void address(bool in_group) {
    std::string name, raw, cs, bytes;
    bool last_ew = false, pending_space = false;
    auto add_word = [&](const std::string& w, bool ew) {
      if (!name.empty() && pending_space && !(ew && last_ew)) name.push_back(' ');
      name += w;
      last_ew = ew;
      pending_space = false;
    };
    for (;;) {
      std::size_t before = i;
      skip_cfws();
      if (i != before) pending_space = true;
      if (i >= s.size()) break;
      char c = s[i];
      if (c == ',' || (c == ';' && in_group)) break;
      if (c == '<') {
        std::string a = angle();
        out.push_back({collapse_ws(decode_words(name)), a});
        skip_cfws();
        while (i < s.size() && s[i] != ',' && !(in_group && s[i] == ';')) {  // junk after '>'
          defect = true;
          ++i;
        }
        return;
      }
      if (c == ':' && !in_group && raw.find('@') == std::string::npos) {
        ++i;
        group();
        skip_cfws();
        while (i < s.size() && s[i] != ',') {  // junk after ';' ("group:;@domain")
          defect = true;
          ++i;
        }
        return;
      }
      if (c == '"') {
        std::string q = quoted();
        bool plain = std::all_of(q.begin(), q.end(),
                                 [](char ch) { return is_atext_local(ch) || ch == '.'; });
        raw += (plain && !q.empty()) ? q : "\"" + q + "\"";
        add_word(q, false);
        continue;
      }
      if (c == '=' && s.compare(i, 2, "=?") == 0) {
        if (std::size_t n = encoded_word(s, i, cs, bytes)) {
          add_word(to_utf8(bytes, cs), true);
          raw.append(s.substr(i, n));
          i += n;
          continue;
        }
      }
      if (c == '[') {  // domain literal
        std::size_t e = s.find(']', i);
        e = e == std::string_view::npos ? s.size() : e + 1;
        raw.append(s.substr(i, e - i));
        i = e;
        continue;
      }
      if (c == '@' || c == '.' || c == ';' || c == ':' || c == '>' || c == '\\' || c == ')') {
        raw.push_back(c);
        if ((c == '.' || c == '@') && !name.empty())
          name.push_back(c);  // obs-phrase, or an address used as a name
        pending_space = false;
        ++i;
        continue;
      }
      std::size_t b = i;
      while (i < s.size() && !is_addr_special(s[i])) ++i;
      if (i == b) {  // any other special (']', a stray '\\' ...): keep it, move on
        raw.push_back(s[i++]);
        defect = true;
        continue;
      }
      std::string_view w = s.substr(b, i - b);
      if (pending_space && !raw.empty() && raw.back() != '.' && raw.back() != '@')
        raw.push_back(' ');
      raw.append(w);
      add_word(std::string(w), false);
    }
    // A ';' outside a group ends no addr-spec and cannot be in one: stray group ends
    // ("a@b;, c@d") are dropped from the address's tail (kept when they are all there is,
    // so the count walk, which does not build strings, agrees).
    while (raw.size() > 1 && raw.back() == ';') raw.pop_back();
    if (!raw.empty()) out.push_back({std::string{}, valid_utf8(quote_local(raw))});
  }

  void group() {
    for (;;) {
      skip_cfws();
      if (i >= s.size()) {
        defect = true;  // group without ';'
        return;
      }
      if (s[i] == ';') {
        ++i;
        return;
      }
      if (s[i] == ',') {
        ++i;
        continue;
      }
      std::size_t before = i;
      if (keeping())
        address(true);
      else
        dropped += count_address(true);
      if (i == before) ++i;
    }
  }

  // Byte classes of count_address's run: the bytes that neither end an address nor
  // change how the next one is read.
  enum : unsigned char { other, word, eq, dot, at_sign, space };
  static constexpr std::array<unsigned char, 256> run_class = [] {
    std::array<unsigned char, 256> t{};
    for (int c = 0; c < 256; ++c) {
      const char ch = static_cast<char>(c);
      t[static_cast<std::size_t>(c)] = ch == '='              ? eq
                                       : ch == '.'            ? dot
                                       : ch == '@'            ? at_sign
                                       : is_ws(ch)            ? space
                                       : !is_addr_special(ch) ? word
                                                              : other;
    }
    return t;
  }();

  // address() for an address past `keep`: the same decisions -- where it ends, whether it
  // holds anything, whether a ':' opens a group (no '@' before it) -- without building
  // its strings or decoding its words. Returns how many addresses it counts: 0 or 1, or
  // a group's members. Words, dots, '@' and white space are taken in one run; the run
  // stops at any other special and at an '=' that starts a token (it may open an
  // encoded word, which may hold commas).
  std::size_t count_address(bool in_group) {
    const std::size_t n = s.size();
    bool any = false, at = false;
    auto has_at = [&](std::size_t b, std::size_t e) {
      return std::memchr(s.data() + b, '@', e - b) != nullptr;
    };
    for (;;) {
      skip_cfws();
      if (i >= n) break;
      const char c = s[i];
      switch (c) {
        case ',':
          return any;
        case ';':
          if (in_group) return any;
          break;
        case '<':
          skip_angle();
          skip_cfws();
          while (i < n && s[i] != ',' && !(in_group && s[i] == ';')) {  // junk after '>'
            defect = true;
            ++i;
          }
          return 1;
        case ':':
          if (in_group || at) break;
          {
            ++i;
            const std::size_t members = count_group();
            skip_cfws();
            while (i < n && s[i] != ',') {  // junk after ';'
              defect = true;
              ++i;
            }
            return members;
          }
        case '"':
          for (++i; i < n && s[i] != '"'; ++i) {
            if (s[i] == '\\' && i + 1 < n) ++i;
            at = at || s[i] == '@';
          }
          if (i < n)
            ++i;
          else
            defect = true;
          any = true;
          continue;
        case '[': {  // domain literal
          std::size_t e = s.find(']', i);
          e = e == std::string_view::npos ? n : e + 1;
          at = at || has_at(i, e);
          any = true;
          i = e;
          continue;
        }
        case ']':
          defect = true;
          break;
        case '>':
        case '\\':
        case ')':
          break;
        default:
          if (c == '=') {
            if (std::size_t len = encoded_word_length(s, i)) {
              at = at || has_at(i, i + len);
              any = true;
              i += len;
              continue;
            }
          }
          i = run(i, at);
          any = true;
          continue;
      }
      any = true;  // one special octet, kept in the address as it is
      ++i;
    }
    return any;
  }

  // From s[j] (a word octet, '=', '.' or '@'), past words, dots, '@' and white space;
  // sets `at` on an '@'. Stops before an '=' that starts a token (after white space, an
  // '@' or a dot that was not inside a word), as address() looks for an encoded word there.
  std::size_t run(std::size_t j, bool& at) const noexcept {
    const std::size_t n = s.size();
    const unsigned char first = run_class[static_cast<unsigned char>(s[j])];
    bool in_word = first == word || first == eq;
    at = at || s[j] == '@';
    for (++j; j < n; ++j) {
      const unsigned char k = run_class[static_cast<unsigned char>(s[j])];
      if (k == word) {
        in_word = true;
      } else if (k == eq) {
        if (!in_word) break;
      } else if (k == other) {
        break;
      } else if (k != dot) {  // a dot inside a word is part of it, else a token of its own
        at = at || k == at_sign;
        in_word = false;
      }
    }
    return j;
  }

  // group() for a group past `keep`: its members counted.
  std::size_t count_group() {
    std::size_t members = 0;
    for (;;) {
      skip_cfws();
      if (i >= s.size()) {
        defect = true;  // group without ';'
        return members;
      }
      if (s[i] == ';') {
        ++i;
        return members;
      }
      if (s[i] == ',') {
        ++i;
        continue;
      }
      std::size_t before = i;
      members += count_address(true);
      if (i == before) ++i;
    }
  }

  // Past `keep`, an address of the common forms -- `local@domain`, `Name <local@domain>`,
  // `"Last, First" <local@domain>` -- ending at a comma or the end is one address
  // whatever address() would make of it, so it is counted by one tight scan. Words and
  // addresses here are atext but '?' ("=?" may start an encoded word, which may span
  // commas), '.' and '@'; spaces and quoted strings may stand between words. Returns
  // where it ends, or npos for anything else (comments, groups, encoded words: address()
  // walks those).
  std::size_t simple_end(std::size_t j) const noexcept {
    static constexpr auto table = [] {
      std::array<bool, 256> t{};
      for (int c = 0; c < 256; ++c)
        t[static_cast<std::size_t>(c)] =
            (is_atext_local(static_cast<char>(c)) && c != '?') || c == '.' || c == '@';
      return t;
    }();
    constexpr auto npos = std::string_view::npos;
    auto word = [&](char c) { return table[static_cast<unsigned char>(c)]; };
    const std::size_t n = s.size();
    while (j < n) {
      if (word(s[j]) || s[j] == ' ' || s[j] == '\t') {
        ++j;
      } else if (s[j] == '"') {
        for (++j; j < n && s[j] != '"'; j += s[j] == '\\' && j + 1 < n ? 2 : 1) {
        }
        if (j >= n) return npos;
        ++j;
      } else {
        break;
      }
    }
    if (j < n && s[j] == '<') {
      for (++j; j < n && word(s[j]); ++j) {
      }
      if (j >= n || s[j] != '>') return npos;
      for (++j; j < n && (s[j] == ' ' || s[j] == '\t'); ++j) {
      }
    }
    return j == n || s[j] == ',' ? j : npos;
  }

  void list() {
    while (i < s.size()) {
      skip_cfws();
      if (i >= s.size()) break;
      if (s[i] == ',' || s[i] == ';') {
        ++i;
        continue;
      }
      std::size_t before = i;
      if (keeping()) {
        address(false);
      } else if (std::size_t e = simple_end(i); e != std::string_view::npos) {
        ++dropped;
        i = e;
      } else {
        dropped += count_address(false);
      }
      if (i == before) ++i;
    }
  }
};

}  // namespace

std::vector<mailbox> parse_address_list(std::string_view raw, bool* defect) {
  return parse_address_list(raw, static_cast<std::size_t>(-1), nullptr, defect);
}

std::vector<mailbox> parse_address_list(std::string_view raw, std::size_t keep, std::size_t* total,
                                        bool* defect) {
  std::vector<mailbox> out;
  parse_address_list(raw, keep, total, defect, out);
  return out;
}

void parse_address_list(std::string_view raw, std::size_t keep, std::size_t* total, bool* defect,
                        std::vector<mailbox>& out) {
  out.clear();
  std::string buf;
  const std::string_view u = unfold_raw(raw, buf);
  addr_parser p{u, 0, out};
  p.keep = keep;
  p.list();
  for (auto& m : out) m.name = valid_utf8(m.name);
  if (defect) *defect = p.defect;
  if (total) *total = out.size() + p.dropped;
}

// ---- dates -------------------------------------------------------------------------

namespace {

int month_of(std::string_view w) {
  static constexpr std::string_view names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                               "jul", "aug", "sep", "oct", "nov", "dec"};
  if (w.size() < 3) return 0;
  for (int m = 0; m < 12; ++m)
    if (iequals(w.substr(0, 3), names[m])) return m + 1;
  return 0;
}

bool all_digits(std::string_view w) {
  return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<int> zone_name(std::string_view w) {
  static constexpr std::pair<std::string_view, int> zones[] = {
      {"ut", 0},     {"utc", 0},    {"gmt", 0},    {"z", 0},      {"ast", -240},
      {"adt", -180}, {"est", -300}, {"edt", -240}, {"cst", -360}, {"cdt", -300},
      {"mst", -420}, {"mdt", -360}, {"pst", -480}, {"pdt", -420}};
  for (auto [n, off] : zones)
    if (iequals(w, n)) return off;
  if (w.size() == 1 && ((w[0] | 0x20) >= 'a' && (w[0] | 0x20) <= 'z')) return 0;  // military
  return std::nullopt;
}

// At most 9 decimal digits, already checked to be digits.
int small_int(std::string_view digits) noexcept {
  int v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

// What sscanf(t, "%d:%d:%d") does for a token without whitespace: the number of
// integers read (each with an optional sign, at most 9 digits) before the first
// mismatch.
int scan_hms(std::string_view t, int& a, int& b, int& c) noexcept {
  int* out[3] = {&a, &b, &c};
  std::size_t i = 0;
  for (int k = 0; k < 3; ++k) {
    if (k > 0) {
      if (i >= t.size() || t[i] != ':') return k;
      ++i;
    }
    bool neg = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) neg = t[i++] == '-';
    std::size_t b0 = i;
    int v = 0;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9' && i - b0 < 9) v = v * 10 + (t[i++] - '0');
    if (i == b0) return k;
    *out[k] = neg ? -v : v;
  }
  return 3;
}

// The form nearly every agent writes, "[Ddd, ]D[D] Mon YYYY HH:MM:SS +ZZZZ" with single
// spaces and nothing else, read in place; false when the field is anything else (then the
// general reader below decides). Same result as the general reader on what it accepts.
bool canonical_date(std::string_view raw, std::optional<std::chrono::sys_seconds>& out) {
  std::string_view s = detail::trim(raw);
  auto digit = [&](std::size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '9'; };
  auto num = [&](std::size_t i, std::size_t n) {
    int v = 0;
    for (std::size_t k = 0; k < n; ++k) v = v * 10 + (s[i + k] - '0');
    return v;
  };
  std::size_t i = 0;
  if (s.size() > 5 && s[3] == ',' && s[4] == ' ') {
    static constexpr std::string_view days[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
    if (std::none_of(std::begin(days), std::end(days),
                     [&](std::string_view d) { return iequals(s.substr(0, 3), d); }))
      return false;
    i = 5;
  }
  const std::size_t dn = digit(i) && digit(i + 1) ? 2 : digit(i) ? 1 : 0;
  if (dn == 0) return false;
  const int day = num(i, dn);
  i += dn;
  // " Mon YYYY HH:MM:SS +ZZZZ": 24 bytes, exactly
  if (s.size() - i != 24 || s[i] != ' ' || s[i + 4] != ' ' || s[i + 9] != ' ' || s[i + 12] != ':' ||
      s[i + 15] != ':' || s[i + 18] != ' ' || (s[i + 19] != '+' && s[i + 19] != '-'))
    return false;
  const std::string_view mon = s.substr(i + 1, 3);
  const int month = month_of(mon);
  if (month == 0 || !std::all_of(mon.begin(), mon.end(),
                                 [](char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }))
    return false;
  for (std::size_t k : {5, 6, 7, 8, 10, 11, 13, 14, 16, 17, 20, 21, 22, 23})
    if (!digit(i + k)) return false;
  const int year = num(i + 5, 4), hh = num(i + 10, 2), mm = num(i + 13, 2);
  int ss = num(i + 16, 2);
  const int zv = num(i + 20, 4);
  if (day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60) return false;
  if (ss == 60) ss = 59;
  const int zone = (s[i + 19] == '-' ? -1 : 1) * ((zv / 100) * 60 + zv % 100);
  using namespace std::chrono;
  year_month_day ymd{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                     std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok()) {
    out.reset();
  } else {
    out = sys_seconds{sys_days{ymd}} + hours{hh} + minutes{mm} + seconds{ss} - minutes{zone};
  }
  return true;
}

}  // namespace

std::optional<std::chrono::sys_seconds> parse_date(std::string_view raw) {
  if (std::optional<std::chrono::sys_seconds> d; canonical_date(raw, d)) return d;
  // Strip comments, split on whitespace and commas. A comment becomes one space and
  // every other byte one byte, so the result is never longer than `raw`: a date fits on
  // the stack (a longer field, always malformed, goes to the heap).
  char local[128];
  std::string heap;
  char* s = local;
  if (raw.size() > sizeof local) {
    heap.resize(raw.size());
    s = heap.data();
  }
  std::size_t len = 0;
  {
    detail::lexer lx{raw};
    while (!lx.at_end()) {
      if (lx.peek() == '(') {
        // An unclosed comment swallows the rest of the field: what it hid is unknown,
        // so the field is not a date (reading on would invent a time of midnight).
        int depth = 0;
        while (!lx.at_end()) {
          char c = raw[lx.i++];
          if (c == '\\' && !lx.at_end()) ++lx.i;
          else if (c == '(') ++depth;
          else if (c == ')' && --depth == 0) break;
        }
        if (depth != 0) return std::nullopt;
        s[len++] = ' ';
      } else {
        char c = raw[lx.i++];
        if (c == ':') {
          // obs-hour / obs-minute / obs-second: CFWS may surround the colons
          // ("09 : 55 : 06"); glued back so the time stays one token.
          std::size_t k = len;
          while (k > 0 && s[k - 1] == ' ') --k;
          if (k > 0 && s[k - 1] >= '0' && s[k - 1] <= '9') len = k;
          const std::size_t save = lx.i;
          lx.skip_cfws();
          if (lx.at_end() || lx.peek() < '0' || lx.peek() > '9') lx.i = save;
        }
        s[len++] = c == ',' || is_ws(c) ? ' ' : c;
      }
    }
  }
  // The tokens, two slots spare for splitting "21-Aug-2002" into three.
  std::size_t count = 0;
  for (std::size_t i = 0; i < len; ++i) count += s[i] != ' ' && (i == 0 || s[i - 1] == ' ');
  std::string_view local_toks[24];
  std::vector<std::string_view> heap_toks;
  std::string_view* tok = local_toks;
  if (count + 2 > std::size(local_toks)) {
    heap_toks.resize(count + 2);
    tok = heap_toks.data();
  }
  std::size_t n = 0;
  for (std::size_t i = 0; i < len;) {
    while (i < len && s[i] == ' ') ++i;
    std::size_t b = i;
    while (i < len && s[i] != ' ') ++i;
    if (i > b) tok[n++] = std::string_view(s + b, i - b);
  }
  // "21-Aug-2002" style
  if (n >= 1 && std::count(tok[0].begin(), tok[0].end(), '-') == 2 && tok[0][0] != '-') {
    std::string_view t = tok[0];
    auto a = t.find('-'), b = t.rfind('-');
    std::move_backward(tok + 1, tok + n, tok + n + 2);
    tok[0] = t.substr(0, a);
    tok[1] = t.substr(a + 1, b - a - 1);
    tok[2] = t.substr(b + 1);
    n += 2;
  }
  const std::span<const std::string_view> toks(tok, n);
  int day = -1, month = 0, year = -1, hh = -1, mm = 0, ss = 0, zone = 0;
  bool have_zone = false;
  for (std::string_view t : toks) {
    if (t.find(':') != std::string_view::npos && hh < 0) {
      int a = -1, b = -1, c = 0;
      int n = scan_hms(t, a, b, c);
      if (n < 2) return std::nullopt;
      hh = a;
      mm = b;
      ss = n == 3 ? c : 0;
      continue;
    }
    if ((t[0] == '+' || t[0] == '-') && t.size() == 5 && all_digits(t.substr(1))) {
      int v = small_int(t.substr(1));
      zone = (v / 100) * 60 + v % 100;
      if (t[0] == '-') zone = -zone;
      have_zone = true;
      continue;
    }
    if (hh >= 0 && !have_zone && t.size() == 4 && all_digits(t) && year >= 0) {
      // Unsigned offset after the time ("23:37:59 0530"): read as positive, as Python does.
      int v = small_int(t);
      if (v % 100 < 60 && v / 100 <= 14) {
        zone = (v / 100) * 60 + v % 100;
        have_zone = true;
        continue;
      }
    }
    if (hh >= 0 && (iequals(t, "pm") || iequals(t, "am"))) {  // 12-hour clock
      if (iequals(t, "pm") && hh < 12) hh += 12;
      if (iequals(t, "am") && hh == 12) hh = 0;
      continue;
    }
    if (all_digits(t)) {
      if (t.size() > 4) continue;
      int v = small_int(t);
      if (day < 0 && t.size() <= 2 && v >= 1 && v <= 31)
        day = v;
      else if (year < 0) {
        year = v;
        if (t.size() <= 2)
          year += v < 50 ? 2000 : 1900;
        else if (t.size() == 3)
          year += 1900;
      }
      continue;
    }
    if (int m = month_of(t); m && month == 0 && t.size() <= 9) {
      month = m;
      continue;
    }
    if (hh >= 0 && !have_zone) {
      if (auto z = zone_name(t)) {
        zone = *z;
        have_zone = true;
      }
    }
  }
  // RFC 5322 3.3: time-of-day is not optional; a date without one is not a date-time.
  if (day < 0 || month == 0 || year < 0 || hh < 0) return std::nullopt;
  if (hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60) return std::nullopt;
  if (ss == 60) ss = 59;
  using namespace std::chrono;
  year_month_day ymd{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                     std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok()) return std::nullopt;
  return sys_seconds{sys_days{ymd}} + hours{hh} + minutes{mm} + seconds{ss} - minutes{zone};
}

std::string format_iso8601(std::chrono::sys_seconds t) {
  using namespace std::chrono;
  auto dp = floor<days>(t);
  year_month_day ymd{dp};
  hh_mm_ss hms{t - dp};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

// ---- message ids ---------------------------------------------------------------------

namespace {
// Calls f(id) for each message id of the field, in order, until f returns false.
template <class F>
void for_each_message_id(std::string_view raw, F&& f) {
  std::string buf;
  const std::string_view u = unfold_raw(raw, buf);
  detail::lexer lx{u};
  for (;;) {
    lx.skip_cfws();
    if (lx.at_end()) break;
    if (lx.peek() == '<') {
      std::size_t e = u.find('>', lx.i);
      const std::size_t end = e == std::string::npos ? u.size() : e;
      // Most ids carry no whitespace: checked from the view, copied once.
      std::string_view inside = u.substr(lx.i + 1, end - (lx.i + 1));
      lx.i = e == std::string::npos ? u.size() : e + 1;
      bool go = true;
      if (std::none_of(inside.begin(), inside.end(), [](char c) { return is_ws(c); })) {
        if (!inside.empty()) go = f(valid_utf8(inside));
      } else {
        std::string id;
        for (char c : inside)
          if (!is_ws(c)) id.push_back(c);
        if (!id.empty()) go = f(valid_utf8(id));
      }
      if (!go) return;
    } else {
      std::size_t b = lx.i;
      while (!lx.at_end() && !is_ws(lx.peek()) && lx.peek() != '<' && lx.peek() != '(' &&
             lx.peek() != ',')
        ++lx.i;
      if (lx.i > b) {
        if (!f(valid_utf8(u.substr(b, lx.i - b)))) return;
      } else {
        ++lx.i;
      }
    }
  }
}
}  // namespace

std::vector<std::string> parse_message_id_list(std::string_view raw) {
  std::vector<std::string> out;
  for_each_message_id(raw, [&](std::string&& id) {
    out.push_back(std::move(id));
    return true;
  });
  return out;
}

std::optional<std::string> parse_message_id(std::string_view raw) {
  if (raw.find('<') == std::string_view::npos) {  // no brackets: the value without spaces
    std::string id;
    for (char c : raw)
      if (!is_ws(c)) id.push_back(c);
    if (id.empty()) return std::nullopt;
    return valid_utf8(id);
  }
  std::optional<std::string> first;  // the first id alone: no list built
  for_each_message_id(raw, [&](std::string&& id) {
    first = std::move(id);
    return false;
  });
  return first;
}

// ---- Content-Type / Content-Disposition ------------------------------------------------

const mime_parameter* mime_field::find(std::string_view name) const noexcept {
  for (const auto& p : params)
    if (iequals(p.name, name)) return &p;
  return nullptr;
}

namespace {

std::string percent_decode(std::string_view v) {
  std::string out;
  auto hex = [](char h) {
    return (h >= '0' && h <= '9') || ((h | 0x20) >= 'a' && (h | 0x20) <= 'f');
  };
  auto val = [](char h) { return h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10; };
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '%' && i + 2 < v.size() + 0 && hex(v[i + 1]) && hex(v[i + 2])) {
      out.push_back(static_cast<char>(val(v[i + 1]) << 4 | val(v[i + 2])));
      i += 2;
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

std::string unescape(std::string_view v, bool quoted) {
  if (!quoted) return std::string(v);
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size()) ++i;
    out.push_back(v[i]);
  }
  return out;
}

void read_params(detail::lexer& lx, std::vector<mime_parameter>& out) {
  struct section {
    bool extended;
    std::string value;
  };
  struct pending {
    std::map<int, section> sections;
  };
  std::vector<std::pair<std::string, pending>> joined;  // keeps first-seen order
  detail::param_reader pr{lx};
  std::string_view name, value;
  bool quoted = false;
  while (pr.next(name, value, quoted)) {
    std::string n;
    for (char c : name) n.push_back(ascii_lower(c));
    bool extended = !n.empty() && n.back() == '*';
    if (extended) n.pop_back();
    int index = -1;
    if (auto star = n.find('*');
        star != std::string::npos && all_digits(std::string_view(n).substr(star + 1))) {
      index = std::stoi(n.substr(star + 1).substr(0, 6));
      n.resize(star);
    }
    auto it = std::find_if(joined.begin(), joined.end(), [&](auto& j) { return j.first == n; });
    if (it == joined.end()) {
      joined.emplace_back(n, pending{});
      it = joined.end() - 1;
    }
    int key = index < 0 ? 0 : index;
    if (!it->second.sections.count(key))
      it->second.sections[key] = section{extended, unescape(value, quoted)};
  }
  for (auto& [n, p] : joined) {
    mime_parameter mp;
    mp.name = n;
    std::string bytes;
    bool any_extended = false;
    bool first = true;
    for (auto& [idx, sec] : p.sections) {
      std::string_view v = sec.value;
      std::string tmp;
      if (sec.extended) {
        any_extended = true;
        if (first) {  // charset'language'value
          auto q1 = v.find('\''), q2 = q1 == std::string_view::npos ? q1 : v.find('\'', q1 + 1);
          if (q2 != std::string_view::npos) {
            mp.charset = std::string(v.substr(0, q1));
            mp.language = std::string(v.substr(q1 + 1, q2 - q1 - 1));
            v = v.substr(q2 + 1);
          }
        }
        bytes += percent_decode(v);
      } else {
        bytes += sec.value;
      }
      first = false;
    }
    mp.value = any_extended ? to_utf8(bytes, mp.charset) : decode_words(bytes);
    out.push_back(std::move(mp));
  }
}

}  // namespace

bool detail::simple_charset_param(std::string_view raw, std::optional<std::string>& out) {
  std::string buf;
  const std::string_view u = unfold_raw(raw, buf);
  detail::lexer lx{u};
  // Positioned as parse_content_type leaves it before the parameters.
  lx.skip_cfws();
  std::string_view type = lx.token();
  lx.skip_cfws();
  bool typed = false;
  if (!type.empty() && lx.eat('/')) {
    lx.skip_cfws();
    typed = !lx.token().empty();
  }
  if (!typed) lx.skip_past(';');
  detail::param_reader pr{lx};
  std::string_view name, value, found;
  bool quoted = false, have = false;
  while (pr.next(name, value, quoted)) {
    if (name.size() < 7 || !iequals(name.substr(0, 7), "charset")) continue;
    if (name.size() != 7) return false;  // charset*, charset*0...: sections to join
    if (have) continue;                  // the first one counts, as in read_params
    if (quoted && value.find('\\') != std::string_view::npos) return false;
    have = true;
    found = value;
  }
  out.reset();
  if (!have) return true;
  if (found.find("=?") != std::string_view::npos) return false;
  for (char c : found)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  std::string v;
  for (char c : detail::trim(found)) v.push_back(ascii_lower(c));
  out = std::move(v);
  return true;
}

mime_field parse_content_type(std::string_view raw) {
  std::string buf;
  const std::string_view u = unfold_raw(raw, buf);
  mime_field f;
  detail::lexer lx{u};
  lx.skip_cfws();
  std::string_view type = lx.token();
  lx.skip_cfws();
  if (!type.empty() && lx.eat('/')) {
    lx.skip_cfws();
    std::string_view sub = lx.token();
    if (!sub.empty()) {
      for (char c : type) f.value.push_back(ascii_lower(c));
      f.value.push_back('/');
      for (char c : sub) f.value.push_back(ascii_lower(c));
    }
  }
  if (f.value.empty()) lx.skip_past(';');
  read_params(lx, f.params);
  return f;
}

mime_field parse_content_disposition(std::string_view raw) {
  std::string buf;
  const std::string_view u = unfold_raw(raw, buf);
  mime_field f;
  detail::lexer lx{u};
  lx.skip_cfws();
  for (char c : lx.token()) f.value.push_back(ascii_lower(c));
  read_params(lx, f.params);
  return f;
}

// ---- Received -------------------------------------------------------------------------

received_field parse_received(std::string_view raw) {
  received_field r;
  std::string buf;
  const std::string_view u = unfold_raw(raw, buf);
  std::string_view s = u;
  if (auto semi = s.rfind(';'); semi != std::string_view::npos) {
    r.date = parse_date(s.substr(semi + 1));
    s = s.substr(0, semi);
  }
  detail::lexer lx{s};
  std::string* slot = nullptr;
  for (;;) {
    lx.skip_cfws();
    if (lx.at_end()) break;
    std::size_t b = lx.i;
    if (lx.peek() == '<') {
      lx.skip_past('>');
    } else {
      while (!lx.at_end() && !is_ws(lx.peek()) && lx.peek() != '(') ++lx.i;
    }
    std::string_view w = s.substr(b, lx.i - b);
    if (w.empty()) {
      ++lx.i;
      continue;
    }
    if (iequals(w, "from"))
      slot = &r.from;
    else if (iequals(w, "by"))
      slot = &r.by;
    else if (iequals(w, "via"))
      slot = &r.via;
    else if (iequals(w, "with"))
      slot = &r.with;
    else if (iequals(w, "id"))
      slot = &r.id;
    else if (iequals(w, "for"))
      slot = &r.for_;
    else if (slot && slot->empty())
      *slot = valid_utf8(w);
  }
  return r;
}

}  // namespace inlet::mime
