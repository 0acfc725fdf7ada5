// The query repository: named queries in a file, loaded at run time (a query can change
// without a rebuild) and bound to C++ query types.
//
//   -- name: GetMessages
//   SELECT mid, st_id, attaches FROM mail.messages
//    WHERE uid = :uid AND mid = ANY(:mids::code.mids)
//
//   struct GetMessages {
//     static constexpr std::string_view name = "GetMessages";
//     struct parameters_type { std::int64_t uid; std::vector<std::int64_t> mids; };
//     using row_type = message_row;     // what validate() checks the columns against
//   };
//   BOOST_DESCRIBE_STRUCT(GetMessages::parameters_type, (), (uid, mids))
//
//   auto repo = pg::query_repository<GetMessages>::load_file("queries.sql");
//   repo.validate(conn);                         // every query vs the server, all errors at once
//   co_await conn.async_query(repo.make_query<GetMessages>(params), pg::into(rows));
//
// :name placeholders become $n, n being the member's position in parameters_type (its
// Boost.Describe members); `::` casts are left alone. make_query<Q> compiles only for a
// Q of the repository and its own parameters_type. Errors name the file and line.
//
// Thread-safety: after loading, a repository is read-only; its query texts (views
// returned by make_query) live as long as the repository.
#pragma once
#include <array>
#include <boost/describe/members.hpp>
#include <boost/mp11/algorithm.hpp>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "inlet/pg/connection.hpp"
#include "inlet/pg/query.hpp"
#include "inlet/pg/result.hpp"

namespace inlet::pg {

namespace detail {
/// One parsed query of a repository file.
struct repo_entry {
  std::string name;
  std::string text;  // with $n
  int line = 0;      // of its "-- name:" line
};
/// Parses "-- name:" blocks, translating :param to $n with `params` (index + 1).
/// Appends "file:line: ..." lines to `errors` for unknown parameters and duplicates.
std::vector<repo_entry> parse_repository(std::string_view text, std::string_view file,
                                         const std::vector<std::string_view>& params_of_all,
                                         const std::vector<std::size_t>& param_offsets,
                                         const std::vector<std::string_view>& query_names,
                                         std::string& errors);
std::string read_file(const std::string& path, std::error_code& ec);

template <class P>
constexpr auto member_names() {
  using members = boost::describe::describe_members<P, boost::describe::mod_public>;
  return []<template <class...> class L, class... M>(L<M...>) {
    return std::array<std::string_view, sizeof...(M)>{std::string_view(M::name)...};
  }(members{});
}
template <class P>
using member_list = boost::describe::describe_members<P, boost::describe::mod_public>;
}  // namespace detail

/// A query type: a name, a described parameters_type, optionally a row_type.
template <class Q>
concept repository_query = requires {
  { Q::name } -> std::convertible_to<std::string_view>;
  typename Q::parameters_type;
} && boost::describe::has_describe_members<typename Q::parameters_type>::value;

template <repository_query... Qs>
class query_repository {
 public:
  /// Parses text (named `file` in errors). Throws pg::error listing every problem.
  static query_repository load_text(std::string_view text, std::string_view file = "<text>") {
    query_repository r;
    std::string errors;
    std::vector<std::string_view> params;
    std::vector<std::size_t> offsets;
    (add_params<Qs>(params, offsets), ...);
    offsets.push_back(params.size());
    const std::vector<std::string_view> names{std::string_view(Qs::name)...};
    auto entries = detail::parse_repository(text, file, params, offsets, names, errors);
    r.file_ = std::string(file);
    for (std::size_t i = 0; i < names.size(); ++i) {
      bool found = false;
      for (auto& e : entries)
        if (e.name == names[i]) r.entries_[i] = e, found = true;
      if (!found)
        errors +=
            std::string(file) + ": query \"" + std::string(names[i]) + "\" is not in the file\n";
    }
    if (!errors.empty()) fail(errors);
    return r;
  }
  static query_repository load_file(const std::string& path) {
    std::error_code ec;
    std::string text = detail::read_file(path, ec);
    if (ec) fail(path + ": " + ec.message());
    return load_text(text, path);
  }

  /// Q's query with the values of p. Compiles only for a Q of this repository and
  /// Q::parameters_type.
  template <class Q>
  auto make_query(const typename Q::parameters_type& p) const {
    constexpr std::size_t i = index_of<Q>();
    const auto& text = entries_[i].text;
    return [&]<template <class...> class L, class... M>(L<M...>) {
      return query<std::remove_cvref_t<decltype(p.*M::pointer)>...>(text, (p.*M::pointer)...);
    }(detail::member_list<typename Q::parameters_type>{});
  }
  template <class Q>
  std::string_view text() const noexcept {
    return entries_[index_of<Q>()].text;
  }

  /// Prepares every query on the server and checks its parameters (count and types
  /// against parameters_type) and, when Q has a row_type, its result columns (count and
  /// types, by position). Throws pg::error listing every mismatch with file and line.
  void validate(connection& c) const;

 private:
  template <class Q>
  static constexpr std::size_t index_of() {
    constexpr bool found = (std::is_same_v<Q, Qs> || ...);
    static_assert(found, "make_query<Q>: Q is not a query of this repository");
    std::size_t i = 0;
    ((std::is_same_v<Q, Qs> ? false : (++i, true)) && ...);
    return i;
  }
  template <class Q>
  static void add_params(std::vector<std::string_view>& params, std::vector<std::size_t>& offsets) {
    offsets.push_back(params.size());
    for (auto n : detail::member_names<typename Q::parameters_type>()) params.push_back(n);
  }
  [[noreturn]] static void fail(const std::string& errors) {
    diagnostics d;
    d.client_message = errors;
    throw error(make_error_code(errc::invalid_value), std::move(d));
  }
  template <class Q>
  void validate_one(connection& c, std::size_t i, std::string& errors) const;

  std::string file_;
  std::array<detail::repo_entry, sizeof...(Qs)> entries_;
};

namespace detail {
/// Prepares `text` under a scratch name with the C++ parameter types and returns the
/// server's parameter and result type OIDs; ec and `message` on failure (syntax, unknown
/// column, operator or cast that does not fit the C++ types, ...).
void describe_statement(connection& c, const std::string& text,
                        const std::vector<std::uint32_t>& cpp_params,
                        std::vector<std::uint32_t>& params, std::vector<std::uint32_t>& results,
                        std::string& message, std::error_code& ec);

template <class T>
void check_type(const char* what, std::size_t k, std::uint32_t got, std::string& out) {
  if (value_traits<T>::accepts(got)) return;
  out += std::string(" ") + what + " " + std::to_string(k + 1) + " is " + type_name(got) +
         " (oid " + std::to_string(got) + ") on the server, the C++ type maps to oid " +
         std::to_string(value_traits<T>::type_oid()) + ";";
}
}  // namespace detail

template <repository_query... Qs>
template <class Q>
void query_repository<Qs...>::validate_one(connection& c, std::size_t i,
                                           std::string& errors) const {
  const auto& e = entries_[i];
  std::vector<std::uint32_t> params, results;
  std::vector<std::uint32_t> cpp;
  boost::mp11::mp_for_each<detail::member_list<typename Q::parameters_type>>([&](auto m) {
    using T =
        std::remove_cvref_t<decltype(std::declval<typename Q::parameters_type&>().*m.pointer)>;
    cpp.push_back(value_traits<T>::type_oid());
  });
  std::string msg;
  std::error_code ec;
  detail::describe_statement(c, e.text, cpp, params, results, msg, ec);
  std::string out;
  if (ec) {
    out = " " + msg;
  } else {
    using P = typename Q::parameters_type;
    using members = detail::member_list<P>;
    constexpr std::size_t np = boost::mp11::mp_size<members>::value;
    if (params.size() != np) {
      out += " the server sees " + std::to_string(params.size()) +
             " parameters, parameters_type has " + std::to_string(np) + ";";
    } else {
      std::size_t k = 0;
      boost::mp11::mp_for_each<members>([&](auto m) {
        using T = std::remove_cvref_t<decltype(std::declval<P&>().*m.pointer)>;
        detail::check_type<T>("parameter", k, params[k], out);
        ++k;
      });
    }
    if constexpr (requires { typename Q::row_type; }) {
      using tr = detail::row_traits<typename Q::row_type>;
      if (results.size() != tr::size) {
        out += " the query returns " + std::to_string(results.size()) + " columns, row_type has " +
               std::to_string(tr::size) + ";";
      } else if constexpr (!tr::by_name) {  // by-name rows: names are checked on each read
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          (detail::check_type<typename tr::template type<I>>("column", I, results[I], out), ...);
        }(std::make_index_sequence<tr::size>{});
      }
    }
  }
  if (!out.empty()) {
    if (out.back() == ';') out.pop_back();
    errors += file_ + ":" + std::to_string(e.line) + ": " + e.name + ":" + out + "\n";
  }
}

template <repository_query... Qs>
void query_repository<Qs...>::validate(connection& c) const {
  detail::type_scope scope(detail::types_of(*detail::impl_of(c)));  // user types' OIDs
  std::string errors;
  std::size_t i = 0;
  (validate_one<Qs>(c, i++, errors), ...);
  if (!errors.empty()) fail(errors);
}

}  // namespace inlet::pg
