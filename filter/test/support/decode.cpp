#include "decode.hpp"

#include <iconv.h>

#include <cerrno>
#include <stdexcept>

namespace inlet::filter::test {
namespace {

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string convert(std::string_view in, const char* to, const char* from) {
  iconv_t cd = iconv_open(to, from);
  if (cd == reinterpret_cast<iconv_t>(-1)) throw std::runtime_error("iconv_open failed");
  std::string out(in.size() * 4 + 16, '\0');
  char* src = const_cast<char*>(in.data());
  std::size_t src_left = in.size();
  char* dst = out.data();
  std::size_t dst_left = out.size();
  std::size_t rc = iconv(cd, &src, &src_left, &dst, &dst_left);
  iconv_close(cd);
  if (rc == static_cast<std::size_t>(-1)) throw std::runtime_error("iconv failed");
  out.resize(out.size() - dst_left);
  return out;
}

}  // namespace

std::string qp_decoder::feed(std::string_view in) {
  std::string data = pending_;
  data.append(in);
  pending_.clear();
  std::string out;
  std::size_t i = 0;
  while (i < data.size()) {
    char c = data[i];
    if (c != '=') {
      out.push_back(c);
      ++i;
      continue;
    }
    // An escape: need up to two more bytes to decide.
    if (data.size() - i < 3) {
      // "=\n" is complete (soft break with bare LF); otherwise wait for more.
      if (data.size() - i == 2 && data[i + 1] == '\n') { i += 2; continue; }
      pending_ = data.substr(i);
      return out;
    }
    if (data[i + 1] == '\r' && data[i + 2] == '\n') { i += 3; continue; }  // soft line break
    if (data[i + 1] == '\n') { i += 2; continue; }
    int h = hexval(data[i + 1]), l = hexval(data[i + 2]);
    if (h < 0 || l < 0) { out.push_back('='); ++i; continue; }  // keep malformed literally
    out.push_back(static_cast<char>(h * 16 + l));
    i += 3;
  }
  return out;
}

std::string qp_decoder::finish() {
  std::string out = std::move(pending_);
  pending_.clear();
  return out;
}

std::string base64_decoder::feed(std::string_view in) {
  std::string out;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else continue;  // CR, LF, '=' padding, junk
    acc_ = (acc_ << 6) | static_cast<unsigned>(v);
    bits_ += 6;
    if (bits_ >= 8) {
      bits_ -= 8;
      out.push_back(static_cast<char>((acc_ >> bits_) & 0xFF));
    }
  }
  return out;
}

std::string to_utf8(std::string_view in, const char* charset) { return convert(in, "UTF-8", charset); }
std::string from_utf8(std::string_view in, const char* charset) { return convert(in, charset, "UTF-8"); }

std::string base64_encode(std::string_view in) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t col = 0;
  auto put = [&](char c) {
    out.push_back(c);
    if (++col == 76) { out += "\r\n"; col = 0; }
  };
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    put(tbl[(v >> 18) & 63]); put(tbl[(v >> 12) & 63]); put(tbl[(v >> 6) & 63]); put(tbl[v & 63]);
  }
  if (in.size() - i == 1) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    put(tbl[(v >> 18) & 63]); put(tbl[(v >> 12) & 63]); put('='); put('=');
  } else if (in.size() - i == 2) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    put(tbl[(v >> 18) & 63]); put(tbl[(v >> 12) & 63]); put(tbl[(v >> 6) & 63]); put('=');
  }
  out += "\r\n";
  return out;
}

}  // namespace inlet::filter::test
