#include "mini_mime.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace inlet::filter::bench {
namespace {

constexpr std::size_t max_header_block = 256 * 1024;
constexpr std::size_t max_carry = 1024;

// Windows-1252 0x80..0x9F; 0 = undefined (kept as U+FFFD).
constexpr char16_t cp1252_high[32] = {
    0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0,      0x017D, 0,      0,      0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0,      0x017E, 0x0178};

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return lower(x) == lower(y);
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// Value of parameter `name` in a Content-Type/Disposition value ("" if absent).
std::string param(std::string_view value, std::string_view name) {
  std::size_t pos = 0;
  while ((pos = value.find(';', pos)) != std::string_view::npos) {
    std::string_view rest = trim(value.substr(pos + 1));
    ++pos;
    std::size_t eq = rest.find('=');
    if (eq == std::string_view::npos || !iequals(trim(rest.substr(0, eq)), name)) continue;
    std::string_view v = trim(rest.substr(eq + 1));
    if (!v.empty() && v.front() == '"') {
      v.remove_prefix(1);
      return std::string(v.substr(0, v.find('"')));
    }
    return std::string(v.substr(0, std::min(v.find(';'), v.find_first_of(" \t"))));
  }
  return {};
}

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

void put_utf8(char*& o, char32_t cp) {
  if (cp < 0x80) {
    *o++ = static_cast<char>(cp);
  } else if (cp < 0x800) {
    *o++ = static_cast<char>(0xC0 | (cp >> 6));
    *o++ = static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *o++ = static_cast<char>(0xE0 | (cp >> 12));
    *o++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *o++ = static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

void mini_mime::feed(std::string_view in) {
  while (!in.empty()) {
    if (in_headers_) {
      feed_headers(in);
    } else {
      process_body(in);
    }
  }
}

// Offset just past the blank line ending a header block in `h` (searching from
// `from`), or npos.
static std::size_t header_end(std::string_view h, std::size_t from) {
  if (from == 0 && (h.starts_with("\r\n") || h.starts_with("\n"))) return h[0] == '\n' ? 1 : 2;
  // memchr per line (AVX2 in glibc); glibc's memmem is a slow generic loop for such
  // short needles.
  const char* base = h.data();
  const std::size_t n = h.size();
  for (std::size_t p = from; p < n;) {
    const char* nl = static_cast<const char*>(std::memchr(base + p, '\n', n - p));
    if (nl == nullptr) break;
    std::size_t i = static_cast<std::size_t>(nl - base);
    if (i + 1 < n && base[i + 1] == '\n') return i + 2;
    if (i + 2 < n && base[i + 1] == '\r' && base[i + 2] == '\n') return i + 3;
    p = i + 1;
  }
  return std::string_view::npos;
}

void mini_mime::feed_headers(std::string_view& in) {
  if (header_buf_.empty()) {  // fast path: the whole block is inside this fragment
    std::size_t end = header_end(in, 0);
    if (end != std::string_view::npos) {
      parse_headers(in.substr(0, end));
      in.remove_prefix(end);
      in_headers_ = false;
      line_start_ = true;
      return;
    }
  }
  const std::size_t old = header_buf_.size();
  header_buf_.append(in);
  std::size_t end = header_end(header_buf_, old >= 3 ? old - 3 : 0);
  if (end == std::string::npos) {
    in = {};
    if (header_buf_.size() > max_header_block) end = header_buf_.size();  // give up: treat as block
    else return;
  } else {
    in.remove_prefix(end - old);
  }
  parse_headers(std::string_view(header_buf_).substr(0, end));
  header_buf_.clear();
  in_headers_ = false;
  line_start_ = true;
}

void mini_mime::parse_headers(std::string_view block) {
  std::string type = "text/plain", boundary, charset;
  bool attachment = false;
  cte enc = cte::identity;
  std::string unfolded;
  auto handle = [&](std::string_view name, std::string_view value) {
    if (iequals(name, "content-type")) {
      std::string_view t = trim(value.substr(0, value.find(';')));
      type.assign(t);
      for (char& c : type) c = lower(c);
      boundary = param(value, "boundary");
      charset = param(value, "charset");
      for (char& c : charset) c = lower(c);
    } else if (iequals(name, "content-transfer-encoding")) {
      if (iequals(value, "quoted-printable")) enc = cte::qp;
      else if (iequals(value, "base64")) enc = cte::base64;
    } else if (iequals(name, "content-disposition")) {
      attachment = iequals(trim(value.substr(0, value.find(';'))), "attachment");
    } else if (top_level_ && (iequals(name, "subject") || iequals(name, "comments") ||
                              iequals(name, "keywords"))) {
      sink_.begin(stream_kind::header);
      sink_.piece(value);
      sink_.end();
    }
  };
  // A field runs until a line that does not start with a blank (folding).
  while (!block.empty()) {
    std::size_t nl = block.find('\n');
    std::string_view line = block.substr(0, nl == std::string_view::npos ? block.size() : nl + 1);
    block.remove_prefix(line.size());
    // Only Content-*, Subject, Comments and Keywords matter: decide on the first byte
    // before looking for the colon (most header bytes are Received: and friends).
    char c0 = lower(line[0]);
    bool wanted = c0 == 'c' || (top_level_ && (c0 == 's' || c0 == 'k'));
    if (!wanted) continue;  // continuation lines of a skipped field start with a blank
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = trim(line.substr(0, colon));
    std::string_view value = trim(line.substr(colon + 1));
    if (!block.empty() && (block[0] == ' ' || block[0] == '\t')) {
      if (wanted) unfolded.assign(value);
      while (!block.empty() && (block[0] == ' ' || block[0] == '\t')) {
        std::size_t nl2 = block.find('\n');
        std::string_view cont = block.substr(0, nl2 == std::string_view::npos ? block.size() : nl2 + 1);
        block.remove_prefix(cont.size());
        if (wanted) {
          unfolded.push_back(' ');
          unfolded.append(trim(cont));
        }
      }
      value = unfolded;
    }
    if (wanted) handle(name, value);
  }
  top_level_ = false;

  cur_ = part{};
  cur_.enc = enc;
  cur_.html = type == "text/html";
  if (charset == "iso-8859-1" || charset == "latin1" || charset == "iso-8859-15")
    cur_.charset = cs::latin1;
  else if (charset == "windows-1252" || charset == "cp1252")
    cur_.charset = cs::cp1252;
  b64_acc_ = 0;
  b64_bits_ = 0;
  qp_npending_ = 0;
  if (type.starts_with("multipart/") && !boundary.empty()) {
    boundaries_.push_back("--" + boundary);
    skipping_ = true;  // preamble
  } else if (type.starts_with("text/") && !attachment) {
    skipping_ = false;
    sink_.begin(cur_.html ? stream_kind::text_html : stream_kind::text_plain);
    stream_open_ = true;
  } else {
    skipping_ = true;
  }
}

bool mini_mime::handle_line(std::string_view line) {
  if (boundaries_.empty() || !line.starts_with("--")) return false;
  std::string_view l = trim(line);
  for (std::size_t k = boundaries_.size(); k-- > 0;) {
    const std::string& b = boundaries_[k];
    if (!l.starts_with(b)) continue;
    std::string_view rest = l.substr(b.size());
    if (!rest.empty() && rest != "--") continue;
    close_stream();
    boundaries_.resize(rest.empty() ? k + 1 : k);
    if (rest.empty()) {
      in_headers_ = true;  // the next part's headers
    } else {
      skipping_ = true;  // epilogue
    }
    return true;
  }
  return false;
}

void mini_mime::process_body(std::string_view& in) {
  if (!carry_.empty()) {
    const char* nl = static_cast<const char*>(std::memchr(in.data(), '\n', in.size()));
    std::size_t take = nl ? static_cast<std::size_t>(nl - in.data()) + 1 : in.size();
    carry_.append(in.substr(0, take));
    in.remove_prefix(take);
    if (!nl && carry_.size() < max_carry) return;
    std::string line = std::move(carry_);
    carry_.clear();
    line_start_ = nl != nullptr;
    if (!handle_line(line)) emit(line);
    if (in_headers_) return;
  }
  const std::size_t n = in.size();
  if (boundaries_.empty()) {  // no multipart: the whole rest is body
    if (n > 0) line_start_ = in[n - 1] == '\n';
    emit(in);
    in = {};
    return;
  }
  std::size_t pos = 0, run = 0;
  while (pos < n) {
    if (line_start_ && in[pos] == '-') {
      const char* nl = static_cast<const char*>(std::memchr(in.data() + pos, '\n', n - pos));
      if (nl == nullptr) {  // may be a boundary: carry the partial line
        emit(in.substr(run, pos - run));
        carry_.assign(in.substr(pos));
        in = {};
        return;
      }
      std::size_t end = static_cast<std::size_t>(nl - in.data()) + 1;
      std::string_view line = in.substr(pos, end - pos);
      if (line.starts_with("--")) {
        emit(in.substr(run, pos - run));
        run = pos;
        if (handle_line(line)) {
          in.remove_prefix(end);
          line_start_ = true;
          return;  // feed() continues with headers or the next body run
        }
      }
    }
    // Next line that starts with '-' (the only lines that can be boundaries): look for
    // '-' (absent from base64 bodies, rarer than LF in text) preceded by LF.
    bool found = false;
    for (std::size_t p = pos + 1; p < n;) {
      const char* d = static_cast<const char*>(std::memchr(in.data() + p, '-', n - p));
      if (d == nullptr) break;
      std::size_t i = static_cast<std::size_t>(d - in.data());
      if (in[i - 1] == '\n') {
        pos = i;
        found = true;
        break;
      }
      p = i + 1;
    }
    if (!found) {
      line_start_ = in[n - 1] == '\n';
      pos = n;
      break;
    }
    line_start_ = true;
  }
  emit(in.substr(run, pos - run));
  in = {};
}

void mini_mime::emit(std::string_view run) {
  if (skipping_ || run.empty() || !stream_open_) return;
  std::string_view d = convert(decode(run));
  if (!d.empty()) sink_.piece(d);
}

std::string_view mini_mime::decode(std::string_view run) {
  if (cur_.enc == cte::identity) return run;
  if (buf1_.size() < run.size() + 4) buf1_.resize(run.size() + 4);
  char* o = buf1_.data();
  if (cur_.enc == cte::base64) {
    for (char c : run) {
      int v;
      if (c >= 'A' && c <= 'Z') v = c - 'A';
      else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
      else if (c >= '0' && c <= '9') v = c - '0' + 52;
      else if (c == '+') v = 62;
      else if (c == '/') v = 63;
      else continue;
      b64_acc_ = (b64_acc_ << 6) | static_cast<unsigned>(v);
      b64_bits_ += 6;
      if (b64_bits_ >= 8) {
        b64_bits_ -= 8;
        *o++ = static_cast<char>((b64_acc_ >> b64_bits_) & 0xFF);
      }
    }
    return {buf1_.data(), static_cast<std::size_t>(o - buf1_.data())};
  }
  // quoted-printable, with up to two pending bytes after '=' carried between runs
  std::size_t i = 0;
  while (i < run.size()) {
    if (qp_npending_ == 0) {
      const char* eq = static_cast<const char*>(std::memchr(run.data() + i, '=', run.size() - i));
      std::size_t stop = eq ? static_cast<std::size_t>(eq - run.data()) : run.size();
      std::memcpy(o, run.data() + i, stop - i);
      o += stop - i;
      i = stop;
      if (i == run.size()) break;
      qp_pending_[qp_npending_++] = run[i++];
      continue;
    }
    qp_pending_[qp_npending_++] = run[i++];
    if (qp_npending_ == 2) {
      if (qp_pending_[1] == '\n') qp_npending_ = 0;       // soft break, bare LF
      continue;
    }
    // three bytes: '=' x y
    if (qp_pending_[1] == '\r' && qp_pending_[2] == '\n') {
      // soft line break
    } else {
      int h = hexval(qp_pending_[1]), l = hexval(qp_pending_[2]);
      if (h >= 0 && l >= 0) {
        *o++ = static_cast<char>(h * 16 + l);
      } else {
        std::memcpy(o, qp_pending_, 3);
        o += 3;
      }
    }
    qp_npending_ = 0;
  }
  return {buf1_.data(), static_cast<std::size_t>(o - buf1_.data())};
}

std::string_view mini_mime::convert(std::string_view bytes) {
  if (cur_.charset == cs::utf8) return bytes;
  // Pure ASCII needs no conversion: test 8 bytes at a time.
  std::uint64_t acc = 0, w[4];
  std::size_t i = 0;
  for (; i + 32 <= bytes.size(); i += 32) {
    std::memcpy(w, bytes.data() + i, 32);
    acc |= w[0] | w[1] | w[2] | w[3];
    if (acc & 0x8080808080808080ull) break;
  }
  for (; i + 8 <= bytes.size(); i += 8) {
    std::memcpy(w, bytes.data() + i, 8);
    acc |= w[0];
  }
  for (; i < bytes.size(); ++i) acc |= static_cast<unsigned char>(bytes[i]);
  if ((acc & 0x8080808080808080ull) == 0) return bytes;
  if (buf2_.size() < bytes.size() * 3) buf2_.resize(bytes.size() * 3);
  char* o = buf2_.data();
  for (unsigned char c : bytes) {
    char32_t cp = c;
    if (cur_.charset == cs::cp1252 && c >= 0x80 && c < 0xA0)
      cp = cp1252_high[c - 0x80] ? cp1252_high[c - 0x80] : 0xFFFD;
    put_utf8(o, cp);
  }
  return {buf2_.data(), static_cast<std::size_t>(o - buf2_.data())};
}

void mini_mime::close_stream() {
  if (stream_open_) {
    sink_.end();
    stream_open_ = false;
  }
}

void mini_mime::finish() {
  if (in_headers_ && !header_buf_.empty()) {
    parse_headers(header_buf_);
    header_buf_.clear();
  }
  if (!carry_.empty()) {
    std::string line = std::move(carry_);
    carry_.clear();
    if (!handle_line(line)) emit(line);
  }
  close_stream();
}

}  // namespace inlet::filter::bench
