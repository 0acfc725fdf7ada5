// Differential fuzz target: random prepare/commit/consume/detach/shrink/grow/
// find/slice sequences on a streambuf, checked against a flat std::string.
#include <inlet/buffer/find.hpp>
#include <inlet/buffer/streambuf.hpp>

#include <boost/asio/buffer.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using inlet::buffer::segment;
using inlet::buffer::streambuf;
namespace asio = boost::asio;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "mismatch: %s\n", what);
  std::abort();
}
#define CHECK(c) \
  do {           \
    if (!(c)) fail(#c); \
  } while (0)

struct input {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::size_t num(std::size_t max) {  // 0..max, biased small
    std::size_t v = byte();
    if (v & 0x80) v = ((v & 0x7f) << 8) | byte();
    return max == 0 ? 0 : v % (max + 1);
  }
};

// Span by span, in place: building a string of up to 1 MiB after every operation made
// page faults most of this target's time.
void check_same(const streambuf& sb, const std::string& model) {
  CHECK(sb.size() == model.size());
  std::size_t at = 0;
  for (std::string_view v : sb.readable_spans()) {
    CHECK(at + v.size() <= model.size());
    CHECK(v == std::string_view(model).substr(at, v.size()));
    at += v.size();
  }
  CHECK(at == model.size());
  CHECK(static_cast<std::size_t>(sb.end() - sb.begin()) == model.size());
}

// The bytes written: a fixed mix of the characters the finds look for, read from a
// different offset each time (built once, not byte by byte per write).
const std::string& pattern() {
  static const std::string p = [] {
    std::string s(20000 + 256, '\0');
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = "ab\r\n.x"[(i * 7 + (i >> 3) + (i >> 9)) % 6];
    return s;
  }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  input in{data, size};
  static const char* const patterns[] = {"\r\n.\r\n", "\r\n", ".", "ab", "aba", "\r\n\r\n"};
  const std::size_t frag = in.byte() & 1 ? 4096 : 8192;
  streambuf sb(inlet::buffer::pool::get(frag), 1 << 20);
  std::string model;
  model.reserve(sb.max_size());
  std::vector<std::pair<segment, std::string>> kept;  // detached segments and their bytes
  std::uint8_t fill = 0;  // offset into pattern()
  while (in.n > 0) {
    switch (in.byte() % 10) {
      case 0:
      case 1: {  // prepare + write + commit part
        std::size_t n = in.num(20000);
        if (model.size() + n > sb.max_size()) {  // past the bound: length_error, nothing changes
          bool threw = false;
          try {
            (void)sb.prepare(n);
          } catch (const std::length_error&) {
            threw = true;
          }
          CHECK(threw);
          break;
        }
        auto bufs = sb.prepare(n);
        CHECK(asio::buffer_size(bufs) == n);
        std::string_view bytes = std::string_view(pattern()).substr(fill++, n);
        asio::buffer_copy(bufs, asio::buffer(bytes.data(), bytes.size()));
        std::size_t c = in.num(n);
        sb.commit(c);
        model.append(bytes, 0, c);
        break;
      }
      case 2: {
        std::size_t n = in.num(model.size());
        sb.consume(n);
        model.erase(0, n);
        break;
      }
      case 3: {
        std::size_t n = in.num(model.size());
        segment s = sb.detach(n);
        CHECK(s == std::string_view(model).substr(0, n));
        kept.emplace_back(std::move(s), model.substr(0, n));
        model.erase(0, n);
        break;
      }
      case 4: {
        std::size_t n = in.num(20000);
        if (model.size() + n > sb.max_size()) break;
        sb.grow(n);
        auto d = sb.data(model.size(), n);
        static const std::string gs(20000, 'g');
        asio::buffer_copy(d, asio::buffer(gs.data(), n));
        model.append(gs, 0, n);
        std::size_t s = in.num(n);
        sb.shrink(s);
        model.resize(model.size() - s);
        break;
      }
      case 5: {
        const char* pat = patterns[in.byte() % 6];
        std::size_t from = in.num(model.size() + 1);
        std::size_t want = model.find(pat, from);
        std::size_t got = sb.find(std::string_view(pat), from);
        CHECK(got == (want == std::string::npos ? streambuf::npos : want));
        break;
      }
      case 6: {
        char c = "ab\r\n.x"[in.byte() % 6];
        std::size_t from = in.num(model.size() + 1);
        std::size_t want = model.find(c, from);
        CHECK(sb.find(c, from) == (want == std::string::npos ? streambuf::npos : want));
        break;
      }
      case 7: {  // slice by pointer and sub by position
        if (model.empty()) break;
        std::size_t pos = in.num(model.size() - 1);
        std::size_t n = in.num(model.size() - pos);
        auto it = sb.begin() + static_cast<std::ptrdiff_t>(pos);
        std::error_code ec;
        segment s = sb.slice(&*it, n, ec);
        CHECK(!ec);
        CHECK(s == std::string_view(model).substr(pos, n));
        CHECK(sb.sub(pos, n) == std::string_view(model).substr(pos, n));
        kept.emplace_back(std::move(s), model.substr(pos, n));
        break;
      }
      case 8: {  // work on a kept segment: drop, append, trim, sub, find
        if (kept.empty()) break;
        auto& [s, bytes] = kept[in.num(kept.size() - 1)];
        switch (in.byte() % 6) {
          case 0:
            kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(in.num(kept.size() - 1)));
            break;
          case 1: {
            auto& [o, obytes] = kept[in.num(kept.size() - 1)];
            if (bytes.size() + obytes.size() > (1u << 20)) break;  // self-appends double
            segment copy = o;  // may be s itself
            std::string cb = obytes;
            s.append(std::move(copy));
            bytes += cb;
            break;
          }
          case 2: {
            std::size_t n = in.num(bytes.size());
            s.remove_prefix(n);
            bytes.erase(0, n);
            n = in.num(bytes.size());
            s.remove_suffix(n);
            bytes.resize(bytes.size() - n);
            break;
          }
          case 3: {
            std::size_t pos = in.num(bytes.size());
            std::size_t n = in.num(bytes.size() - pos);
            CHECK(s.sub(pos, n) == std::string_view(bytes).substr(pos, n));
            break;
          }
          case 4: {
            const char* pat = patterns[in.byte() % 6];
            std::size_t from = in.num(bytes.size() + 1);
            std::size_t want = bytes.find(pat, from);
            CHECK(s.find(std::string_view(pat), from) == (want == std::string::npos ? segment::npos : want));
            break;
          }
          case 5: {
            std::size_t pos = in.num(bytes.size());
            auto it = s.begin() + static_cast<std::ptrdiff_t>(pos);
            CHECK(static_cast<std::size_t>(s.end() - it) == bytes.size() - pos);
            if (pos < bytes.size()) CHECK(*it == bytes[pos]);
            break;
          }
        }
        for (auto& [ks, kb] : kept) CHECK(ks == kb);
        break;
      }
      case 9: {
        if (sb.release_if_empty()) CHECK(!sb.holds_memory());
        std::size_t pos = in.num(model.size());
        std::size_t n = in.num(40);
        char scratch[16];
        std::error_code ec;
        auto v = sb.peek(pos, n, scratch, ec);
        if (!ec) CHECK(v == std::string_view(model).substr(pos, n));
        else CHECK(n > 16 || pos + n > model.size());
        break;
      }
    }
    check_same(sb, model);
  }
  for (auto& [s, bytes] : kept) CHECK(s == bytes);
  return 0;
}
