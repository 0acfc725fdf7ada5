// expect: cannot convert|could not convert|no matching|no viable
// A repository query called with another parameter type (a tuple instead of its
// parameters_type) does not compile.
#include <boost/describe/class.hpp>
#include <tuple>

#include "inlet/pg/repository.hpp"

struct GetMessages {
  static constexpr std::string_view name = "GetMessages";
  struct parameters_type {
    std::int64_t uid;
    std::vector<std::int64_t> mids;
  };
};
BOOST_DESCRIBE_STRUCT(GetMessages::parameters_type, (), (uid, mids))

void body(const inlet::pg::query_repository<GetMessages>& repo) {
  auto parameters = std::make_tuple(42, std::vector<std::int64_t>({1, 2, 3}));
  (void)repo.make_query<GetMessages>(parameters);
}
