#include "file/codec.hpp"

#include <zstd.h>

#include <chrono>
#include <cstdint>
#include <memory>

namespace inlet::store::file {
namespace {

constexpr unsigned char meta_version = 1;

class writer {
 public:
  void u(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void s(std::string_view v) {
    u(v.size());
    out_.append(v);
  }
  void a(const address& v) {
    s(v.name);
    s(v.address);
  }
  template <class List>
  void list(const List& l) {
    u(l.size());
    for (const auto& v : l) a(v);
  }
  std::string take() { return std::move(out_); }
  std::string out_;
};

class reader {
 public:
  explicit reader(std::string_view in) : in_(in) {}
  bool u(std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (in_.empty()) return false;
      const auto b = static_cast<unsigned char>(in_.front());
      in_.remove_prefix(1);
      v |= std::uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  template <class T>
  bool num(T& out) {
    std::uint64_t v;
    if (!u(v)) return false;
    out = static_cast<T>(v);
    return true;
  }
  bool view(std::string_view& v) {
    std::uint64_t n;
    if (!u(n) || n > in_.size()) return false;
    v = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool s(std::string& v) {
    std::uint64_t n;
    if (!u(n) || n > in_.size()) return false;
    v.assign(in_.substr(0, n));
    in_.remove_prefix(n);
    return true;
  }
  bool a(address& v) { return s(v.name) && s(v.address); }
  template <class List>
  bool list(List& l) {
    std::uint64_t n;
    if (!u(n) || n > in_.size()) return false;  // each entry takes at least two bytes
    l.clear();
    l.resize(n);
    for (auto& v : l)
      if (!a(v)) return false;
    return true;
  }
  bool done() const { return in_.empty(); }
  std::string_view in_;
};

}  // namespace

std::string encode_meta(const envelope& e, const summary& s) {
  writer w;
  w.out_.reserve(256);
  w.out_.push_back(static_cast<char>(meta_version));
  w.s(e.helo);
  w.s(e.mail_from);
  w.u(e.rcpt_to.size());
  for (const auto& r : e.rcpt_to) w.s(r);
  w.s(e.remote);
  w.s(e.protocol);
  w.s(e.auth_user);
  w.a(s.from);
  w.list(s.to);
  w.list(s.cc);
  w.list(s.bcc);
  w.list(s.reply_to);
  w.s(s.subject);
  if (s.date) {
    w.u(1);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        s.date->time_since_epoch())
                        .count();
    w.u(static_cast<std::uint64_t>(ns));  // two's complement: dates before 1970 too
  } else {
    w.u(0);
  }
  w.s(s.message_id);
  w.s(s.snippet);
  w.u(s.attachments.size());
  for (const auto& a : s.attachments) {
    w.s(a.filename);
    w.s(a.content_type);
    w.u(a.size);
  }
  w.u(s.inline_parts);
  w.u(s.totals.to);
  w.u(s.totals.cc);
  w.u(s.totals.bcc);
  w.u(s.totals.reply_to);
  w.u(s.totals.attachments);
  return w.take();
}

bool decode_meta(std::string_view in, envelope& e, summary& s) {
  if (in.empty() || static_cast<unsigned char>(in.front()) != meta_version) return false;
  reader r(in.substr(1));
  std::uint64_t n;
  if (!r.s(e.helo) || !r.s(e.mail_from) || !r.u(n) || n > in.size()) return false;
  e.rcpt_to.clear();
  e.rcpt_to.resize(n);
  for (auto& v : e.rcpt_to)
    if (!r.s(v)) return false;
  if (!r.s(e.remote) || !r.s(e.protocol) || !r.s(e.auth_user)) return false;
  if (!r.a(s.from) || !r.list(s.to) || !r.list(s.cc) || !r.list(s.bcc) || !r.list(s.reply_to) ||
      !r.s(s.subject))
    return false;
  std::uint64_t has_date;
  if (!r.u(has_date)) return false;
  if (has_date) {
    std::uint64_t ns;
    if (!r.u(ns)) return false;
    s.date = time_point(std::chrono::duration_cast<time_point::duration>(
        std::chrono::nanoseconds(static_cast<std::int64_t>(ns))));
  } else {
    s.date.reset();
  }
  if (!r.s(s.message_id) || !r.s(s.snippet) || !r.u(n) || n > in.size()) return false;
  s.attachments.clear();
  s.attachments.resize(n);
  for (auto& a : s.attachments)
    if (!r.s(a.filename) || !r.s(a.content_type) || !r.num(a.size)) return false;
  return r.num(s.inline_parts) && r.num(s.totals.to) && r.num(s.totals.cc) &&
         r.num(s.totals.bcc) && r.num(s.totals.reply_to) && r.num(s.totals.attachments) &&
         r.done();
}

int zstd_level(int compression) {
  switch (compression) {
    case 1:
      return 1;
    case 2:
      return 3;
    default:
      return 11;
  }
}

namespace {
struct cctx_free {
  void operator()(ZSTD_CCtx* c) const noexcept { ZSTD_freeCCtx(c); }
};
struct dctx_free {
  void operator()(ZSTD_DCtx* c) const noexcept { ZSTD_freeDCtx(c); }
};
}  // namespace

std::string compress(std::string_view raw, int level) {
  thread_local std::unique_ptr<ZSTD_CCtx, cctx_free> ctx(ZSTD_createCCtx());
  std::string out;
  out.resize(ZSTD_compressBound(raw.size()));
  const std::size_t n =
      ZSTD_compressCCtx(ctx.get(), out.data(), out.size(), raw.data(), raw.size(), level);
  if (ZSTD_isError(n)) throw std::runtime_error(ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

bool decompress(std::string_view frame, std::string& out, std::size_t max_size) {
  thread_local std::unique_ptr<ZSTD_DCtx, dctx_free> ctx(ZSTD_createDCtx());
  const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size > max_size) return false;
  if (size == ZSTD_CONTENTSIZE_UNKNOWN) {
    // Streamed frames (Mailpit's encoder may write them): decode in pieces.
    out.clear();
    ZSTD_DCtx_reset(ctx.get(), ZSTD_reset_session_only);
    ZSTD_inBuffer in{frame.data(), frame.size(), 0};
    char buf[65536];
    while (in.pos < in.size) {
      ZSTD_outBuffer o{buf, sizeof buf, 0};
      const std::size_t rc = ZSTD_decompressStream(ctx.get(), &o, &in);
      if (ZSTD_isError(rc)) return false;
      out.append(buf, o.pos);
      if (out.size() > max_size) return false;
      if (rc == 0 && in.pos == in.size) break;
      if (o.pos == 0 && rc != 0 && in.pos == in.size) return false;  // truncated frame
    }
    return true;
  }
  out.resize(size);
  const std::size_t n = ZSTD_decompressDCtx(ctx.get(), out.data(), out.size(), frame.data(),
                                            frame.size());
  if (ZSTD_isError(n) || n != size) return false;
  return true;
}

bool decode_meta_addresses(std::string_view in, std::string_view& mail_from,
                           std::vector<std::string_view>& rcpt_to) {
  rcpt_to.clear();
  if (in.empty() || static_cast<unsigned char>(in.front()) != meta_version) return false;
  reader r(in.substr(1));
  std::string_view helo;
  std::uint64_t n;
  if (!r.view(helo) || !r.view(mail_from) || !r.u(n) || n > in.size()) return false;
  rcpt_to.resize(n);
  for (auto& v : rcpt_to)
    if (!r.view(v)) return false;
  return true;
}

}  // namespace inlet::store::file
