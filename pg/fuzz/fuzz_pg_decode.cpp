// libFuzzer entry point: the binary value decoders (the parser surface of inlet::pg).
// The first byte picks the C++ type (>= 0x80: composites, ranges, hstore), the rest is the value's
// bytes as the server would send them. Decoding must never crash, hang or read outside the buffer;
// a value that decodes must re-encode and decode to the same value.
#include <boost/describe/class.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "inlet/pg/codec.hpp"

namespace pg = inlet::pg;

namespace {
// User-defined types: composites (plain and described, nested, arrays, NULL fields),
// with OIDs set by hand in a map installed for every input.
struct attach {
  std::string filename, type;
  std::int64_t size = 0;
  static constexpr std::string_view pg_type_name = "mail.attach";
  friend bool operator==(const attach&, const attach&) = default;
};
struct envelope {
  std::optional<std::string> sender;
  std::vector<attach> parts;
  attach main;
  static constexpr std::string_view pg_type_name = "mail.envelope";
  friend bool operator==(const envelope&, const envelope&) = default;
};
BOOST_DESCRIBE_STRUCT(envelope, (), (sender, parts, main))

const pg::type_map& fuzz_types() {
  static const auto m = [] {
    pg::oid_map<attach, envelope, pg::hstore> t;
    pg::set_type_oid<attach>(t, 70000, 70001);
    pg::set_type_oid<envelope>(t, 70002, 70003);
    pg::set_type_oid<pg::hstore>(t, 70004, 70005);
    return t;
  }();
  return m;
}

template <class T>
void check(const char* p, int n) {
  T v{};
  if (pg::decode_value(p, n, v)) return;
  std::string buf;
  std::error_code ec;
  if (!pg::encode_value(v, buf, ec) || ec) return;
  T w{};
  if (pg::decode_value(buf.data(), static_cast<int>(buf.size()), w)) __builtin_trap();
  if constexpr (requires { v == w; }) {
    if constexpr (!std::is_floating_point_v<T>)
      if (!(v == w)) __builtin_trap();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const char* p = reinterpret_cast<const char*>(data + 1);
  const int n = static_cast<int>(size - 1);
  if (data[0] >= 0x80) {  // user-defined types and ranges
    inlet::pg::detail::type_scope scope(&fuzz_types());
    switch ((data[0] - 0x80) % 7) {
      case 0:
        check<attach>(p, n);
        break;
      case 1:
        check<std::vector<attach>>(p, n);
        break;
      case 2:
        check<envelope>(p, n);
        break;
      case 3:
        check<std::vector<std::optional<envelope>>>(p, n);
        break;
      case 4:
        check<pg::range<std::int32_t>>(p, n);
        break;
      case 5:
        check<pg::range<pg::timestamptz>>(p, n);
        break;
      default:
        check<pg::hstore>(p, n);
        break;
    }
    return 0;
  }
  switch (data[0] % 12) {
    case 0:
      check<pg::numeric>(p, n);
      break;
    case 1:
      check<std::vector<std::optional<std::int32_t>>>(p, n);
      break;
    case 2:
      check<std::vector<std::vector<std::string>>>(p, n);
      break;
    case 3:
      check<pg::inet>(p, n);
      break;
    case 4:
      check<pg::jsonb>(p, n);
      break;
    case 5:
      check<pg::timestamptz>(p, n);
      break;
    case 6:
      check<pg::date>(p, n);
      break;
    case 7:
      check<pg::interval>(p, n);
      break;
    case 8:
      check<std::vector<pg::numeric>>(p, n);
      break;
    case 9:
      check<std::vector<bool>>(p, n);
      break;
    case 10:
      check<std::vector<std::vector<std::vector<std::int64_t>>>>(p, n);
      break;
    default:
      check<pg::uuid>(p, n);
      break;
  }
  return 0;
}
