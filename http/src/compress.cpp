// gzip for HTTP answers: which clients take it (Accept-Encoding) and the compression
// itself (zlib's deflate with the gzip wrapper).
#include <zlib.h>

#include <inlet/util/ascii.hpp>

#include "api_internal.hpp"

namespace inlet::http::detail {

// Accept-Encoding lists gzip without q=0 (RFC 9110 12.5.3).
bool accepts_gzip(std::string_view h) {
  while (!h.empty()) {
    auto comma = h.find(',');
    auto item = h.substr(0, comma);
    h = comma == std::string_view::npos ? std::string_view{} : h.substr(comma + 1);
    auto semi = item.find(';');
    auto coding = item.substr(0, semi);
    while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t'))
      coding.remove_prefix(1);
    while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t'))
      coding.remove_suffix(1);
    if (!util::iequals(coding, "gzip")) continue;
    if (semi == std::string_view::npos) return true;
    auto params = item.substr(semi + 1);
    auto q = params.find("q=");
    if (q == std::string_view::npos) return true;
    auto v = params.substr(q + 2);
    v = v.substr(0, v.find_first_of(" ;,\t"));
    const bool zero =
        !v.empty() && v[0] == '0' && v.find_first_not_of("0.") == std::string_view::npos;
    return !zero;
  }
  return false;
}

bool gzip(std::string_view in, std::string& out) {
  z_stream z{};
  // Fastest level: an answer is compressed once per request, on an I/O thread.
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return false;
  out.resize(deflateBound(&z, static_cast<uLong>(in.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END;
}

}  // namespace inlet::http::detail
