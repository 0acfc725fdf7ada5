// Small helpers of the API: error category, percent-decoding, UTF-8 repair, RFC 3339.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include "inlet/http/api.hpp"
#include "inlet/http/error.hpp"

namespace inlet::http {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "inlet.http"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::ok:
        return "ok";
      case errc::bad_request:
        return "bad request";
      case errc::not_found:
        return "not found";
      case errc::method_not_allowed:
        return "method not allowed";
      case errc::payload_too_large:
        return "payload too large";
      case errc::header_too_large:
        return "request header too large";
      case errc::already_started:
        return "server already started";
    }
    return "unknown inlet.http error";
  }
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

const std::error_category& http_category() noexcept {
  static const category c;
  return c;
}

bool percent_decode(std::string_view in, std::string& out, bool plus_is_space) {
  out.clear();
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (in.size() - i < 3) return false;
      int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return true;
}

std::string sanitize_utf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  const std::size_t n = in.size();
  std::size_t i = 0;
  while (i < n) {
    // Runs of ASCII (most of any mail) are copied whole, found eight bytes at a time.
    std::size_t j = i;
    for (std::uint64_t w; j + 8 <= n; j += 8) {
      std::memcpy(&w, p + j, 8);
      if (w & 0x8080808080808080u) break;
    }
    while (j < n && p[j] < 0x80) ++j;
    if (j > i) {
      out.append(in.data() + i, j - i);
      i = j;
      if (i == n) break;
    }
    unsigned char c = p[i];
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF)
      len = 2;
    else if (c == 0xE0) {
      len = 3;
      lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
      len = 3;
    else if (c == 0xED) {
      len = 3;
      hi = 0x9F;
    }  // no surrogates
    else if (c == 0xF0) {
      len = 4;
      lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3)
      len = 4;
    else if (c == 0xF4) {
      len = 4;
      hi = 0x8F;
    }
    bool ok = len != 0 && i + len <= n && p[i + 1] >= lo && p[i + 1] <= hi;
    for (std::size_t k = 2; ok && k < len; ++k) ok = p[i + k] >= 0x80 && p[i + k] <= 0xBF;
    if (ok) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD for one bad byte, then resync
      ++i;
    }
  }
  return out;
}

std::string format_rfc3339(store::time_point t) {
  using namespace std::chrono;
  auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  long frac = static_cast<long>(ms % 1000);
  if (frac < 0) {
    frac += 1000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

}  // namespace inlet::http

namespace inlet::http {
extern const unsigned char swagger_data[];
extern const std::size_t swagger_size;

std::string_view swagger_json() noexcept {
  return {reinterpret_cast<const char*>(swagger_data), swagger_size};
}
}  // namespace inlet::http
