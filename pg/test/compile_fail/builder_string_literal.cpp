// expect: a string literal after \+ would be a parameter
#include "inlet/pg/builder.hpp"

using namespace inlet::pg::literals;
void body() {
  auto q = "SELECT * FROM t WHERE a = "_SQL + "oops";
  (void)q;
}
