// Dates (RFC 5322 3.3 and obsolete forms). Checks: a result formats as a valid timestamp;
// a trailing comment (CFWS) never changes the answer, which also sends the canonical
// form through the general reader; a date written back in the canonical form reads as
// the same instant.
#include <inlet/mime/fields.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto d = inlet::mime::parse_date(in);
  const auto again = inlet::mime::parse_date(std::string(in) + " (c)");
  if (d.has_value() != again.has_value() || (d && *d != *again)) std::abort();
  if (!d) return 0;
  const std::string s = inlet::mime::format_iso8601(*d);
  if (s.size() < 20) std::abort();
  using namespace std::chrono;
  const auto day = floor<days>(*d);
  const year_month_day ymd{day};
  if (ymd.year() < year{1000} || ymd.year() > year{9999}) return 0;
  const hh_mm_ss hms{*d - day};
  static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%u %s %d %02d:%02d:%02d +0000", unsigned(ymd.day()),
                months[unsigned(ymd.month()) - 1], int(ymd.year()), int(hms.hours().count()),
                int(hms.minutes().count()), int(hms.seconds().count()));
  const auto back = inlet::mime::parse_date(buf);
  if (!back || *back != *d) std::abort();
  return 0;
}
