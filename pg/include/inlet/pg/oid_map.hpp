// OID maps: user-defined PostgreSQL types (composites, enums, domains, extension types
// such as hstore) named on the C++ side, their OIDs looked up from the server once.
//
//   struct attach {                       // CREATE TYPE mail.attach AS (...)
//     std::string filename, type;
//     std::int64_t size;
//     static constexpr std::string_view pg_type_name = "mail.attach";
//   };
//   enum class color { red, green };      // CREATE TYPE color AS ENUM ('red', 'green')
//   BOOST_DESCRIBE_ENUM(color, red, green)
//   template <> inline constexpr std::string_view pg::type_name_v<color> = "color";
//
//   auto types = pg::register_types<attach, color>();   // shared_ptr<oid_map<...>>
//   connection_options o; o.types = types;              // every connection of a pool too
//   co_await pg::async_lookup_types(conn, *types);      // once: fills every OID
//   pg::type_oid<attach>(*types);                       // an unregistered type: no compile
//
// Design: the codecs of user types are static (value_traits<T>), but their OIDs are
// per database. An oid_map<Ts...> carries the type list at compile time (type_oid<T>
// checks membership) and derives from an erased type_map, a small vector of
// {key, name, oid, array oid}. A connection holds a type_map; while it binds
// parameters or decodes a result it installs that map as the thread's current one
// (type_scope, a few instructions), and the codecs look their OIDs up there (a linear
// scan over a handful of entries). Outside such a scope a user type has OID 0: as a
// parameter the server infers it, as a column it is a type_mismatch.
//
// Thread-safety: a type_map is written only by the lookup (before it is shared with
// connections in use); afterwards it is read-only and may be shared by any threads.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "inlet/pg/oid.hpp"

namespace inlet::pg {

/// The server-side name of a user-defined type ("mail.attach", "hstore"). Empty for
/// every other type. Defaults to T::pg_type_name when T has one; specialise for enums.
template <class T>
inline constexpr std::string_view type_name_v = [] {
  if constexpr (requires { std::string_view{T::pg_type_name}; })
    return std::string_view{T::pg_type_name};
  else
    return std::string_view{};
}();

/// A type whose OID comes from an OID map.
template <class T>
concept user_type = !type_name_v<T>.empty();

namespace detail {
template <class T>
inline constexpr char type_key = 0;  // its address identifies T at run time
}  // namespace detail

/// The erased map: what connections hold and the codecs read.
class type_map {
 public:
  struct entry {
    const void* key;
    std::string_view name;
    oid_t oid = 0;
    oid_t array_oid = 0;
  };
  const std::vector<entry>& entries() const noexcept { return entries_; }
  std::vector<entry>& entries() noexcept { return entries_; }
  /// The entry of T's key, or null when T is not in this map.
  const entry* find(const void* key) const noexcept {
    for (const auto& e : entries_)
      if (e.key == key) return &e;
    return nullptr;
  }
  /// True once every OID has been looked up.
  bool resolved() const noexcept {
    for (const auto& e : entries_)
      if (e.oid == 0) return false;
    return true;
  }
  /// What the last lookup found missing ("type \"mail.attach\" does not exist ...").
  const std::string& last_error() const noexcept { return error_; }
  std::string& last_error_ref() noexcept { return error_; }

 protected:
  std::vector<entry> entries_;
  std::string error_;
};

/// A map of the user types Ts... (OIDs 0 until looked up).
template <class... Ts>
class oid_map : public type_map {
  static_assert(
      (user_type<Ts> && ...),
      "oid_map: every registered type needs a server-side name (pg_type_name or type_name_v)");

 public:
  oid_map() { entries_ = {entry{&detail::type_key<Ts>, type_name_v<Ts>, 0, 0}...}; }
  template <class T>
  static constexpr bool contains = (std::is_same_v<T, Ts> || ...);
};

/// Makes a shared OID map of Ts... (give it to connection_options::types).
template <class... Ts>
std::shared_ptr<oid_map<Ts...>> register_types() {
  return std::make_shared<oid_map<Ts...>>();
}

/// T's OID in m. Compiles only when T is one of m's types.
template <class T, class... Ts>
oid_t type_oid(const oid_map<Ts...>& m) noexcept {
  static_assert(oid_map<Ts...>::template contains<T>,
                "type_oid<T>(map): T is not registered in this oid_map");
  return m.find(&detail::type_key<T>)->oid;
}
/// T's array type OID in m ("mail.attach[]"). Compiles only when T is one of m's types.
template <class T, class... Ts>
oid_t array_oid(const oid_map<Ts...>& m) noexcept {
  static_assert(oid_map<Ts...>::template contains<T>,
                "array_oid<T>(map): T is not registered in this oid_map");
  return m.find(&detail::type_key<T>)->array_oid;
}
/// Sets T's OIDs by hand (a test without a server, or OIDs known from elsewhere).
template <class T, class... Ts>
void set_type_oid(oid_map<Ts...>& m, oid_t oid, oid_t array = 0) noexcept {
  static_assert(oid_map<Ts...>::template contains<T>,
                "set_type_oid<T>(map): T is not registered in this oid_map");
  for (auto& e : m.entries())
    if (e.key == &detail::type_key<T>) e.oid = oid, e.array_oid = array;
}

namespace detail {
/// The map the codecs of this thread read (set while a connection binds or decodes).
inline thread_local const type_map* current_types = nullptr;

/// Installs a map for the current scope (restores the previous one on exit).
class type_scope {
 public:
  explicit type_scope(const type_map* m) noexcept : prev_(current_types) {
    if (m) current_types = m;
  }
  ~type_scope() { current_types = prev_; }
  type_scope(const type_scope&) = delete;
  type_scope& operator=(const type_scope&) = delete;

 private:
  const type_map* prev_;
};

template <class T>
const type_map::entry* user_entry() noexcept {
  const type_map* m = current_types;
  return m ? m->find(&type_key<T>) : nullptr;
}
template <class T>
oid_t user_oid() noexcept {
  const auto* e = user_entry<T>();
  return e ? e->oid : 0;
}
template <class T>
oid_t user_array_oid() noexcept {
  const auto* e = user_entry<T>();
  return e ? e->array_oid : 0;
}
}  // namespace detail

}  // namespace inlet::pg
