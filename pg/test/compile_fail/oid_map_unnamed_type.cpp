// expect: needs a server-side name
#include "inlet/pg/oid_map.hpp"

struct no_name {
  int x;
};
inlet::pg::oid_map<no_name> m;
