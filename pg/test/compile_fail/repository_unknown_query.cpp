// expect: Q is not a query of this repository
#include <boost/describe/class.hpp>

#include "inlet/pg/repository.hpp"

struct GetMessages {
  static constexpr std::string_view name = "GetMessages";
  struct parameters_type {
    std::int64_t uid;
  };
};
BOOST_DESCRIBE_STRUCT(GetMessages::parameters_type, (), (uid))
struct Other {
  static constexpr std::string_view name = "Other";
  struct parameters_type {
    std::int64_t uid;
  };
};
BOOST_DESCRIBE_STRUCT(Other::parameters_type, (), (uid))

void body(const inlet::pg::query_repository<GetMessages>& repo) {
  (void)repo.make_query<Other>(Other::parameters_type{1});
}
