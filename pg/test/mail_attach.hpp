// The composite `mail.attach` (filename text, type text, size bigint) of OZO's talk, as
// the pg tests name it on the C++ side: one definition for every test that uses it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pg_test {

struct attach {
  std::string filename, type;
  std::int64_t size = 0;
  static constexpr std::string_view pg_type_name = "mail.attach";
  friend bool operator==(const attach&, const attach&) = default;
};

}  // namespace pg_test
