// expect: T is not registered in this oid_map
#include "inlet/pg/oid_map.hpp"

struct attach {
  static constexpr std::string_view pg_type_name = "mail.attach";
};
struct recipient {
  static constexpr std::string_view pg_type_name = "mail.recipient";
};

inlet::pg::oid_t body(const inlet::pg::oid_map<attach>& m) {
  return inlet::pg::type_oid<recipient>(m);
}
