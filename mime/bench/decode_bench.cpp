// base64 and quoted-printable decoding: inlet::mime's decoders vs a naive char-by-char
// reference, on the same in-memory input, rounds alternating A B A B.
//
// usage: mime_decode_bench [--rounds N] [--mib M] [--json-out FILE]
#include "corpus.hpp"

#include <inlet/mime/decode.hpp>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

using namespace inlet::mime;
using namespace inlet::mime::bench;

namespace {

std::string make_base64(std::size_t raw_bytes) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::mt19937 rng(1);
  std::string out;
  std::size_t col = 0;
  for (std::size_t i = 0; i + 3 <= raw_bytes; i += 3) {
    std::uint32_t v = rng() & 0xFFFFFF;
    for (int k = 3; k >= 0; --k) out.push_back(a[(v >> (6 * k)) & 63]);
    if ((col += 4) == 76) {
      out += "\r\n";
      col = 0;
    }
  }
  return out;
}

// Text-like QP: mostly ASCII words, some 8-bit letters as =XX, soft breaks at 76.
std::string make_qp(std::size_t bytes) {
  std::mt19937 rng(2);
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  std::size_t col = 0;
  while (out.size() < bytes) {
    std::uint32_t r = rng() % 100;
    std::string tok;
    if (r < 80) tok.push_back(static_cast<char>('a' + rng() % 26));
    else if (r < 95) tok.push_back(' ');
    else {
      unsigned char c = static_cast<unsigned char>(0xC0 + rng() % 0x3F);
      tok = {'=', hex[c >> 4], hex[c & 15]};
    }
    if (col + tok.size() > 75) {
      out += "=\r\n";
      col = 0;
    }
    out += tok;
    col += tok.size();
  }
  out += "end";  // trailing whitespace at the very end would be (correctly) dropped by ours only
  return out;
}

int b64_val(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::size_t naive_base64(std::string_view in, char* out) {
  std::uint32_t acc = 0;
  int n = 0;
  char* o = out;
  for (char c : in) {
    int v = b64_val(c);
    if (v < 0) continue;
    acc = acc << 6 | static_cast<std::uint32_t>(v);
    if (++n == 4) {
      *o++ = static_cast<char>(acc >> 16);
      *o++ = static_cast<char>(acc >> 8);
      *o++ = static_cast<char>(acc);
      n = 0;
      acc = 0;
    }
  }
  return static_cast<std::size_t>(o - out);
}

int hexv(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

std::size_t naive_qp(std::string_view in, char* out) {
  char* o = out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c != '=') {
      *o++ = c;
    } else if (i + 2 < in.size() && in[i + 1] == '\r' && in[i + 2] == '\n') {
      i += 2;
    } else if (i + 2 < in.size() && std::isxdigit(static_cast<unsigned char>(in[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(in[i + 2]))) {
      *o++ = static_cast<char>(hexv(in[i + 1]) << 4 | hexv(in[i + 2]));
      i += 2;
    } else {
      *o++ = c;
    }
  }
  return static_cast<std::size_t>(o - out);
}

template <class Dec>
std::size_t ours(std::string_view in, char* out) {
  Dec d;
  std::size_t n = 0;
  // Decode in 64 KiB blocks, as body_decoder does with its sink.
  for (std::size_t off = 0; off < in.size(); off += 65536)
    n += d.decode_block(in.substr(off, 65536), out + n);
  return n + d.finish_block(out + n);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 11;
  std::size_t mib = 16;
  std::string json_out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--mib" && i + 1 < argc) mib = static_cast<std::size_t>(std::atoi(argv[++i]));
    else if (a == "--json-out" && i + 1 < argc) json_out = argv[++i];
  }
  const std::string b64 = make_base64(mib << 20), qp = make_qp(mib << 20);
  std::string out(std::max(b64.size(), qp.size()) + block_slack + 65536, '\0');
  std::string check(out.size(), '\0');
  // Same output from both decoders (the input has no cases where the reference is wrong).
  std::size_t n1 = ours<base64_decoder>(b64, out.data()), n2 = naive_base64(b64, check.data());
  if (n1 != n2 || std::memcmp(out.data(), check.data(), n1) != 0) return std::fprintf(stderr, "base64 mismatch\n"), 1;
  n1 = ours<qp_decoder>(qp, out.data());
  n2 = naive_qp(qp, check.data());
  if (n1 != n2 || std::memcmp(out.data(), check.data(), n1) != 0) return std::fprintf(stderr, "qp mismatch\n"), 1;

  std::vector<double> b_ours, b_naive, q_ours, q_naive, rb, rq;
  std::size_t sink = 0;
  for (int r = 0; r < rounds; ++r) {
    b_ours.push_back(seconds([&] { sink += ours<base64_decoder>(b64, out.data()); }));
    b_naive.push_back(seconds([&] { sink += naive_base64(b64, out.data()); }));
    q_ours.push_back(seconds([&] { sink += ours<qp_decoder>(qp, out.data()); }));
    q_naive.push_back(seconds([&] { sink += naive_qp(qp, out.data()); }));
    rb.push_back(b_naive.back() / b_ours.back());
    rq.push_back(q_naive.back() / q_ours.back());
  }
  auto gb = [](std::size_t n, double t) { return static_cast<double>(n) / t / 1e9; };
  auto row = [&](const char* name, std::size_t n, const std::vector<double>& t) {
    stats s = summarize_values(t);
    std::printf("%-16s %10.3f %10.3f %10.3f\n", name, gb(n, s.median), gb(n, s.max), gb(n, s.min));
  };
  std::printf("input: base64 %zu bytes, quoted-printable %zu bytes; %d rounds alternating\n", b64.size(), qp.size(), rounds);
  std::printf("%-16s %10s %10s %10s   (GB/s of encoded input)\n", "decoder", "median", "worst", "best");
  row("base64 inlet", b64.size(), b_ours);
  row("base64 naive", b64.size(), b_naive);
  row("qp inlet", qp.size(), q_ours);
  row("qp naive", qp.size(), q_naive);
  stats sb = summarize_values(rb), sq = summarize_values(rq);
  std::printf("speedup vs naive: base64 median %.2f (%.2f..%.2f), qp median %.2f (%.2f..%.2f)\n", sb.median, sb.min,
              sb.max, sq.median, sq.min, sq.max);
  if (!json_out.empty()) {
    if (FILE* f = std::fopen(json_out.c_str(), "w")) {
      std::fprintf(f,
                   "{\"base64_bytes\":%zu,\"qp_bytes\":%zu,\"rounds\":%d,"
                   "\"base64_inlet_gbps_median\":%.4f,\"base64_naive_gbps_median\":%.4f,"
                   "\"qp_inlet_gbps_median\":%.4f,\"qp_naive_gbps_median\":%.4f,"
                   "\"base64_speedup_median\":%.4f,\"qp_speedup_median\":%.4f}\n",
                   b64.size(), qp.size(), rounds, gb(b64.size(), summarize_values(b_ours).median),
                   gb(b64.size(), summarize_values(b_naive).median), gb(qp.size(), summarize_values(q_ours).median),
                   gb(qp.size(), summarize_values(q_naive).median), sb.median, sq.median);
      std::fclose(f);
    }
  }
  return sink == 1 ? 1 : 0;
}
