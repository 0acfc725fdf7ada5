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
//   co_await repo.async_validate(conn);          // the same, asynchronously
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
#include <boost/asio/associator.hpp>
#include <boost/asio/post.hpp>
#include <boost/describe/members.hpp>
#include <boost/mp11/algorithm.hpp>
#include <map>
#include <memory>
#include <optional>
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

namespace detail {
class statement_check;
template <class Repo, class H>
struct validate_handler;
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

  static constexpr std::size_t size = sizeof...(Qs);

  /// Prepares every query on the server and checks its parameters (count and types
  /// against parameters_type) and, when Q has a row_type, its result columns: count and
  /// types by position for tuples and plain aggregates; for described structs every
  /// field by its name (a missing field, an extra column, a wrong type). Throws
  /// pg::error whose client_message lists every mismatch of every query, one line per
  /// query, with file and line. Synchronous (blocks the thread; no async operation may
  /// be in flight on c).
  void validate(connection& c) const;
  /// The same, asynchronously: void(std::error_code); errc::invalid_value when some query
  /// does not fit, the report in the diagnostics (the default token throws pg::error
  /// carrying it; pg::with_diagnostics(token, d) hands it over). The repository and c
  /// must outlive the operation; the statements run one after another on c.
  template <class Token = pg::use_awaitable_t>
  auto async_validate(connection& c, Token&& token = {}) const;

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
  static std::vector<std::uint32_t> param_oids();
  template <class Q>
  void check_one(std::size_t i, const detail::statement_check& s, std::string& errors) const;
  detail::statement_check make_check(std::size_t i) const;
  void check(std::size_t i, const detail::statement_check& s, std::string& errors) const;
  template <class Repo, class H>
  friend struct detail::validate_handler;

  std::string file_;
  std::array<detail::repo_entry, sizeof...(Qs)> entries_;
};

namespace detail {
/// What the server says about one query, found step by step (sans-io: the caller runs
/// next() on the connection and feeds the outcome back, synchronously or not). The
/// steps: name the C++ parameter types, PREPARE with them (so a cast, an operator or a
/// column that does not fit fails here), read the parameter types the server settled
/// on, run it once with NULL parameters inside a rolled-back transaction (for the
/// columns' names and types, even with zero rows; a data-modifying query changes
/// nothing), DEALLOCATE.
class statement_check {
 public:
  statement_check(std::string_view text, std::vector<std::uint32_t> cpp_params);
  bool done() const noexcept { return step_ == step::done; }
  /// The next statement to run (valid until the next feed()).
  std::string_view next() const noexcept { return sql_; }
  /// The outcome of next(): the result, or the error and its diagnostics.
  void feed(std::error_code ec, const result& r, const diagnostics* d);

  /// Why the query could not be described (the server's SQLSTATE and message), or empty.
  const std::string& failure() const noexcept { return failure_; }
  const std::vector<std::uint32_t>& params() const noexcept { return params_; }
  const std::vector<std::uint32_t>& columns() const noexcept { return columns_; }
  const std::vector<std::string>& names() const noexcept { return names_; }

 private:
  enum class step {
    name_types,
    prepare,
    param_types,
    begin,
    timeout,
    execute,
    rollback,
    deallocate,
    done
  };
  void go(step s);

  std::string text_;
  std::vector<std::uint32_t> cpp_;
  step step_ = step::done;
  std::string sql_;
  std::vector<std::string> type_names_;
  std::vector<std::uint32_t> params_, columns_;
  std::vector<std::string> names_;
  std::string failure_;
};
/// Runs every step of s on c (synchronous forms).
void run_check(connection& c, statement_check& s);
/// Matches the row type's field names to the column names; cols[i] is field i's column
/// or -1. Appends " no column for field(s) ...;" and " column(s) ... match no field;".
void append_field_mismatches(const std::string_view* fields, std::size_t n,
                             const std::vector<std::string>& names, int* cols, std::string& out);

/// A server type's name for messages: built-in names, else the current OID map's.
std::string server_type_name(std::uint32_t o);

template <class T>
void check_type(const std::string& what, std::uint32_t got, std::string& out) {
  if (value_traits<T>::accepts(got)) return;
  out += " " + what + " is " + server_type_name(got) + " (oid " + std::to_string(got) +
         ") on the server, the C++ type maps to oid " +
         std::to_string(value_traits<T>::type_oid()) + ";";
}

}  // namespace detail

template <repository_query... Qs>
template <class Q>
std::vector<std::uint32_t> query_repository<Qs...>::param_oids() {
  std::vector<std::uint32_t> cpp;
  boost::mp11::mp_for_each<detail::member_list<typename Q::parameters_type>>([&](auto m) {
    using T =
        std::remove_cvref_t<decltype(std::declval<typename Q::parameters_type&>().*m.pointer)>;
    cpp.push_back(value_traits<T>::type_oid());
  });
  return cpp;
}

template <repository_query... Qs>
template <class Q>
void query_repository<Qs...>::check_one(std::size_t i, const detail::statement_check& s,
                                        std::string& errors) const {
  const auto& e = entries_[i];
  std::string out;
  if (!s.failure().empty()) {
    out = " " + s.failure();
  } else {
    using P = typename Q::parameters_type;
    using members = detail::member_list<P>;
    constexpr std::size_t np = boost::mp11::mp_size<members>::value;
    const auto& params = s.params();
    if (params.size() != np) {
      out += " the server sees " + std::to_string(params.size()) +
             " parameters, parameters_type has " + std::to_string(np) + ";";
    } else {
      std::size_t k = 0;
      boost::mp11::mp_for_each<members>([&](auto m) {
        using T = std::remove_cvref_t<decltype(std::declval<P&>().*m.pointer)>;
        detail::check_type<T>(
            "parameter " + std::to_string(k + 1) + " (:" + std::string(m.name) + ")", params[k],
            out);
        ++k;
      });
    }
    if constexpr (requires { typename Q::row_type; }) {
      using tr = detail::row_traits<typename Q::row_type>;
      const auto& cols = s.columns();
      if constexpr (tr::by_name) {  // every field by its name: missing, extra, wrong type
        std::array<int, tr::size> at{};
        detail::append_field_mismatches(tr::names.data(), tr::size, s.names(), at.data(), out);
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          ((at[I] >= 0 ? detail::check_type<typename tr::template type<I>>(
                             "column \"" + std::string(tr::names[I]) + "\"",
                             cols[static_cast<std::size_t>(at[I])], out)
                       : void()),
           ...);
        }(std::make_index_sequence<tr::size>{});
      } else if (cols.size() != tr::size) {
        out += " the query returns " + std::to_string(cols.size()) + " columns, row_type has " +
               std::to_string(tr::size) + ";";
      } else {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          (detail::check_type<typename tr::template type<I>>("column " + std::to_string(I + 1),
                                                             cols[I], out),
           ...);
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
detail::statement_check query_repository<Qs...>::make_check(std::size_t i) const {
  std::vector<std::uint32_t> oids;
  std::size_t k = 0;
  ((k++ == i ? (oids = param_oids<Qs>(), true) : false) || ...);  // Qs...[i]
  return detail::statement_check(entries_[i].text, std::move(oids));
}

template <repository_query... Qs>
void query_repository<Qs...>::check(std::size_t i, const detail::statement_check& s,
                                    std::string& errors) const {
  std::size_t k = 0;
  ((k++ == i ? (check_one<Qs>(i, s, errors), true) : false) || ...);
}

template <repository_query... Qs>
void query_repository<Qs...>::validate(connection& c) const {
  detail::type_scope scope(c.types());  // user types' OIDs
  std::string errors;
  for (std::size_t i = 0; i < sizeof...(Qs); ++i) {
    auto s = make_check(i);
    detail::run_check(c, s);
    check(i, s, errors);
  }
  if (!errors.empty()) fail(errors);
}

namespace detail {
// The asynchronous validation: each query's statement_check driven by async_query, one
// statement after another on the connection, then the caller's handler H inline (every
// step completes on H's associated executor, which this handler reports as its own, see
// the associator below). The report reaches H as diagnostics (client_message).
template <class Repo, class H>
struct validate_handler {
  struct state {
    const Repo* repo;
    connection* c;
    std::size_t i = 0;
    std::optional<statement_check> s;
    std::string errors;
  };
  std::unique_ptr<state> st;  // stable: the statement texts are viewed while in flight
  H h;

  void start() {
    if (Repo::size == 0) {
      auto ex = asio::get_associated_executor(h, st->c->get_executor());
      asio::post(ex, [h = std::move(h)]() mutable { std::move(h)(std::error_code{}); });
      return;
    }
    {
      type_scope scope(st->c->types());
      st->s.emplace(st->repo->make_check(0));
    }
    step();
  }
  void operator()(std::error_code ec, result r) {
    diagnostics d;
    if (ec) d = r ? r.error_diagnostics() : diagnostics{};
    st->s->feed(ec, r, ec ? &d : nullptr);
    if (!st->s->done()) return step();
    type_scope scope(st->c->types());
    st->repo->check(st->i, *st->s, st->errors);
    if (++st->i < Repo::size) {
      st->s.emplace(st->repo->make_check(st->i));
      return step();
    }
    if (st->errors.empty()) return std::move(h)(std::error_code{});
    auto diag = std::make_unique<diagnostics>();
    diag->client_message = std::move(st->errors);
    pass_diagnostics(h, diag);
    std::move(h)(make_error_code(errc::invalid_value));
  }

 private:
  void step() {
    connection& c = *st->c;
    const std::string_view text = st->s->next();
    c.async_query(query<>(text), std::move(*this));
  }
};
}  // namespace detail

template <repository_query... Qs>
template <class Token>
auto query_repository<Qs...>::async_validate(connection& c, Token&& token) const {
  return asio::async_initiate<Token, void(std::error_code)>(
      [this, &c](auto h) {
        using handler = detail::validate_handler<query_repository, decltype(h)>;
        auto st = std::make_unique<typename handler::state>();
        st->repo = this;
        st->c = &c;
        handler{std::move(st), std::move(h)}.start();
      },
      token);
}

}  // namespace inlet::pg

template <template <class, class> class Associator, class Repo, class H, class Default>
struct boost::asio::associator<Associator, inlet::pg::detail::validate_handler<Repo, H>, Default> {
  using type = typename Associator<H, Default>::type;
  static type get(const inlet::pg::detail::validate_handler<Repo, H>& v) noexcept {
    return Associator<H, Default>::get(v.h);
  }
  static auto get(const inlet::pg::detail::validate_handler<Repo, H>& v, const Default& d) noexcept
      -> decltype(Associator<H, Default>::get(v.h, d)) {
    return Associator<H, Default>::get(v.h, d);
  }
};
