#include "wire.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <iterator>

#include "inlet/store/search.hpp"

namespace inlet::store::pgstore {

void put_i32(std::string& out, std::int32_t v) {
  auto u = static_cast<std::uint32_t>(v);
  char b[4] = {static_cast<char>(u >> 24), static_cast<char>(u >> 16), static_cast<char>(u >> 8),
               static_cast<char>(u)};
  out.append(b, 4);
}

void put_i64(std::string& out, std::int64_t v) {
  put_i32(out, static_cast<std::int32_t>(static_cast<std::uint64_t>(v) >> 32));
  put_i32(out, static_cast<std::int32_t>(static_cast<std::uint64_t>(v) & 0xffffffffu));
}

std::int32_t get_i32(const char* p) noexcept {
  auto b = reinterpret_cast<const unsigned char*>(p);
  return static_cast<std::int32_t>((std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                                   (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]});
}

std::int64_t get_i64(const char* p) noexcept {
  auto hi = static_cast<std::uint32_t>(get_i32(p));
  auto lo = static_cast<std::uint32_t>(get_i32(p + 4));
  return static_cast<std::int64_t>((std::uint64_t{hi} << 32) | lo);
}

// PostgreSQL's text must be valid UTF-8 (the server's encoding) without NUL; a header
// may hold anything. Valid input is appended as is; each invalid byte becomes U+FFFD.
void append_text(std::string& out, std::string_view v) {
  auto valid_run = [](const unsigned char* p, std::size_t n) -> std::size_t {
    std::size_t i = 0;
    while (i < n) {
      unsigned char c = p[i];
      if (c >= 0x01 && c < 0x80) {
        ++i;
        continue;
      }
      std::size_t len = c >= 0xC2 && c <= 0xDF   ? 2
                        : c >= 0xE0 && c <= 0xEF ? 3
                        : c >= 0xF0 && c <= 0xF4 ? 4
                                                 : 0;
      if (len == 0 || i + len > n) return i;
      for (std::size_t k = 1; k < len; ++k)
        if ((p[i + k] & 0xC0) != 0x80) return i;
      if (c == 0xE0 && p[i + 1] < 0xA0) return i;  // overlong
      if (c == 0xED && p[i + 1] > 0x9F) return i;  // surrogates
      if (c == 0xF0 && p[i + 1] < 0x90) return i;  // overlong
      if (c == 0xF4 && p[i + 1] > 0x8F) return i;  // > U+10FFFF
      i += len;
    }
    return n;
  };
  auto p = reinterpret_cast<const unsigned char*>(v.data());
  std::size_t n = v.size();
  for (;;) {
    std::size_t ok = valid_run(p, n);
    out.append(reinterpret_cast<const char*>(p), ok);
    if (ok == n) return;
    out.append("\xEF\xBF\xBD");
    p += ok + 1;
    n -= ok + 1;
  }
}

namespace {

void patch_i32(std::string& out, std::size_t at, std::int32_t v) {
  auto u = static_cast<std::uint32_t>(v);
  out[at] = static_cast<char>(u >> 24);
  out[at + 1] = static_cast<char>(u >> 16);
  out[at + 2] = static_cast<char>(u >> 8);
  out[at + 3] = static_cast<char>(u);
}

// A column of a record: OID, then a length patched once the value is written.
class record_writer {
 public:
  record_writer(std::string& out, std::int32_t columns) : out_(out) { put_i32(out_, columns); }

  std::size_t open(oid_t type) {
    put_i32(out_, static_cast<std::int32_t>(type));
    std::size_t at = out_.size();
    put_i32(out_, 0);
    return at;
  }
  void close(std::size_t at) {
    patch_i32(out_, at, static_cast<std::int32_t>(out_.size() - at - 4));
  }
  void text(std::string_view v) {
    std::size_t at = open(oids::text);
    append_text(out_, v);
    close(at);
  }
  void bytea(std::string_view v) {
    put_i32(out_, static_cast<std::int32_t>(oids::bytea));
    put_i32(out_, static_cast<std::int32_t>(v.size()));
    out_.append(v);
  }
  void boolean(bool v) {
    put_i32(out_, static_cast<std::int32_t>(oids::bool_));
    put_i32(out_, 1);
    out_.push_back(v ? 1 : 0);
  }
  void int4(std::int32_t v) {
    put_i32(out_, static_cast<std::int32_t>(oids::int4));
    put_i32(out_, 4);
    put_i32(out_, v);
  }
  void int8(std::int64_t v) {
    put_i32(out_, static_cast<std::int32_t>(oids::int8));
    put_i32(out_, 8);
    put_i64(out_, v);
  }
  void timestamptz(std::int64_t unix_us) {
    put_i32(out_, static_cast<std::int32_t>(oids::timestamptz));
    put_i32(out_, 8);
    put_i64(out_, unix_us - pg_epoch_offset_us);
  }
  void null(oid_t type) {
    put_i32(out_, static_cast<std::int32_t>(type));
    put_i32(out_, -1);
  }
  std::string& out() { return out_; }

 private:
  std::string& out_;
};

void encode_addr_record(std::string& out, const address& a) {
  record_writer r(out, 2);
  r.text(a.name);
  r.text(a.address);
}

void encode_attach_record(std::string& out, const attachment_info& a) {
  record_writer r(out, 3);
  r.text(a.filename);
  r.text(a.content_type);
  r.int8(static_cast<std::int64_t>(a.size));
}

// An array column of a record: each element encoded by `one` into the output.
template <class Range, class Fn>
void array_column(record_writer& r, oid_t array_type, oid_t elem, const Range& items, Fn one) {
  std::size_t at = r.open(array_type);
  std::string& out = r.out();
  encode_array_header(out, elem, items.size());
  for (const auto& item : items) {
    std::size_t len_at = out.size();
    put_i32(out, 0);
    one(out, item);
    patch_i32(out, len_at, static_cast<std::int32_t>(out.size() - len_at - 4));
  }
  r.close(at);
}

// The list totals as mail.message.totals reads them: {to, cc, bcc, reply_to,
// attachments}, or NULL when every list is whole (nearly every message).
void encode_totals(record_writer& r, const summary::list_totals& t) {
  const std::uint32_t v[] = {t.to, t.cc, t.bcc, t.reply_to, t.attachments};
  if (std::all_of(std::begin(v), std::end(v), [](std::uint32_t x) { return x == 0; })) {
    r.null(oids::int4_array);
    return;
  }
  std::size_t at = r.open(oids::int4_array);
  encode_array_header(r.out(), oids::int4, std::size(v));
  for (auto x : v) {
    put_i32(r.out(), 4);
    put_i32(r.out(), static_cast<std::int32_t>(std::min<std::uint32_t>(x, INT32_MAX)));
  }
  r.close(at);
}

std::int64_t unix_us(time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

}  // namespace

void encode_array_header(std::string& out, oid_t elem, std::size_t n) {
  put_i32(out, n == 0 ? 0 : 1);
  put_i32(out, 0);
  put_i32(out, static_cast<std::int32_t>(elem));
  if (n == 0) return;
  put_i32(out, static_cast<std::int32_t>(n));
  put_i32(out, 1);
}

void encode_element(std::string& out, std::string_view bytes) {
  put_i32(out, static_cast<std::int32_t>(bytes.size()));
  out.append(bytes);
}

void encode_copy(std::string& out, const shard_types& t, const copy_view& c) {
  const stored_message& m = *c.msg;
  const summary& s = m.summary;
  const envelope& e = m.envelope;
  record_writer r(out, 31);
  r.text(m.id);
  r.timestamptz(c.received_us);
  r.timestamptz(unix_us(m.created));
  r.boolean(c.home);
  r.int4(c.primary_bucket);
  array_column(r, oids::text_array, oids::text, *c.mailboxes,
               [](std::string& o, const std::string& v) { append_text(o, v); });
  array_column(r, oids::int4_array, oids::int4, *c.buckets,
               [](std::string& o, std::int32_t v) { put_i32(o, v); });
  r.text(e.helo);
  r.text(e.mail_from);
  array_column(r, oids::text_array, oids::text, e.rcpt_to,
               [](std::string& o, const std::string& v) { append_text(o, v); });
  r.text(e.remote);
  r.text(e.protocol);
  r.text(e.auth_user);
  {
    std::size_t at = r.open(t.addr);
    encode_addr_record(out, s.from);
    r.close(at);
  }
  for (auto list : s.lists()) array_column(r, t.addr_array, t.addr, list, encode_addr_record);
  r.text(s.subject);
  if (s.date)
    r.timestamptz(unix_us(*s.date));
  else
    r.null(oids::timestamptz);
  r.text(s.message_id);
  r.text(s.snippet);
  array_column(r, t.attach_array, t.attach, s.attachments, encode_attach_record);
  r.int4(static_cast<std::int32_t>(s.inline_parts));
  r.text(s.search_text);
  {
    // The header fields as search::matches sees them (folded), in the order of
    // fields_order; searches compare against these.
    search::prepared_fields pf(m);
    std::size_t at = r.open(oids::text_array);
    encode_array_header(out, oids::text, fields_order.size());
    for (auto f : fields_order) {
      std::size_t len_at = out.size();
      put_i32(out, 0);
      append_text(out, pf.get(f));
      patch_i32(out, len_at, static_cast<std::int32_t>(out.size() - len_at - 4));
    }
    r.close(at);
  }
  r.int8(static_cast<std::int64_t>(m.size));
  auto tags = m.tags();
  array_column(r, oids::text_array, oids::text, *tags,
               [](std::string& o, const std::string& v) { append_text(o, v); });
  r.boolean(c.read);
  r.bytea(m.raw);
  encode_totals(r, s.totals);
}

// ---- decoding ---------------------------------------------------------------------

namespace {

struct cursor {
  const char* p;
  const char* end;
  bool i32(std::int32_t& v) {
    if (end - p < 4) return false;
    v = get_i32(p);
    p += 4;
    return true;
  }
  // A length-prefixed value: NULL gives is_null.
  bool value(std::string_view& v, bool& is_null) {
    std::int32_t len;
    if (!i32(len)) return false;
    if (len < 0) {
      is_null = true;
      v = {};
      return len == -1;
    }
    if (end - p < len) return false;
    is_null = false;
    v = std::string_view(p, static_cast<std::size_t>(len));
    p += len;
    return true;
  }
};

// Calls fn(element bytes, is_null) for each element of a one-dimensional array.
template <class Fn>
bool for_each_element(std::string_view in, Fn fn) {
  cursor c{in.data(), in.data() + in.size()};
  std::int32_t ndim, has_null, elem;
  if (!c.i32(ndim) || !c.i32(has_null) || !c.i32(elem)) return false;
  if (ndim == 0) return c.p == c.end;
  if (ndim != 1) return false;
  std::int32_t n, lower;
  if (!c.i32(n) || !c.i32(lower) || n < 0) return false;
  for (std::int32_t i = 0; i < n; ++i) {
    std::string_view v;
    bool is_null;
    if (!c.value(v, is_null)) return false;
    if (!fn(v, is_null)) return false;
  }
  return c.p == c.end;
}

// Reads the columns of a record: fn(index, type, bytes, is_null).
template <class Fn>
bool for_each_column(std::string_view in, std::int32_t expect, Fn fn) {
  cursor c{in.data(), in.data() + in.size()};
  std::int32_t n;
  if (!c.i32(n) || n != expect) return false;
  for (std::int32_t i = 0; i < n; ++i) {
    std::int32_t type;
    if (!c.i32(type)) return false;
    std::string_view v;
    bool is_null;
    if (!c.value(v, is_null)) return false;
    if (!fn(i, static_cast<oid_t>(type), v, is_null)) return false;
  }
  return c.p == c.end;
}

bool text_column(oid_t type, std::string_view v, bool is_null, std::string& out) {
  if (type != oids::text) return false;
  if (is_null)
    out.clear();
  else
    out.assign(v);
  return true;
}

}  // namespace

bool decode_addr(std::string_view in, address& out) {
  return for_each_column(in, 2, [&](std::int32_t i, oid_t type, std::string_view v, bool null) {
    return text_column(type, v, null, i == 0 ? out.name : out.address);
  });
}

namespace {
template <class List>
bool decode_addrs(std::string_view in, List& out) {
  out.clear();
  return for_each_element(in, [&](std::string_view v, bool null) {
    if (null) return false;
    return decode_addr(v, out.emplace_back());
  });
}
}  // namespace

bool decode_addr_array(std::string_view in, address_list& out) {
  return decode_addrs(in, out);
}
bool decode_addr_array(std::string_view in, std::vector<address>& out) {
  return decode_addrs(in, out);
}

bool decode_attach_array(std::string_view in, std::vector<attachment_info>& out) {
  out.clear();
  return for_each_element(in, [&](std::string_view v, bool null) {
    if (null) return false;
    auto& a = out.emplace_back();
    return for_each_column(v, 3, [&](std::int32_t i, oid_t type, std::string_view f, bool fnull) {
      if (i < 2) return text_column(type, f, fnull, i == 0 ? a.filename : a.content_type);
      if (type != oids::int8) return false;
      if (fnull) {
        a.size = 0;
        return true;
      }
      if (f.size() != 8) return false;
      auto size = get_i64(f.data());
      if (size < 0) return false;
      a.size = static_cast<std::size_t>(size);
      return true;
    });
  });
}

bool decode_text_array(std::string_view in, std::vector<std::string>& out) {
  out.clear();
  return for_each_element(in, [&](std::string_view v, bool null) {
    if (null) return false;
    out.emplace_back(v);
    return true;
  });
}

bool decode_int4_array(std::string_view in, std::vector<std::int32_t>& out) {
  out.clear();
  return for_each_element(in, [&](std::string_view v, bool null) {
    if (null || v.size() != 4) return false;
    out.push_back(get_i32(v.data()));
    return true;
  });
}

}  // namespace inlet::store::pgstore
