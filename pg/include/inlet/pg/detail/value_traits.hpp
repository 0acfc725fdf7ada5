// value_traits<T>: scalars, std::optional (NULL) and std::vector arrays (N-dimensional
// through nesting) on top of type_traits<T>. Included by codec.hpp.
#pragma once
#include <optional>
#include <vector>

namespace inlet::pg {

template <class T>
concept scalar_type = requires { type_traits<T>::type_oid; };

template <class T, class = void> struct value_traits;

namespace detail {
template <class T> struct is_optional : std::false_type {};
template <class U> struct is_optional<std::optional<U>> : std::true_type {};

template <class T> struct is_array_level : std::false_type {};
template <class U, class A>
  requires(!scalar_type<std::vector<U, A>>)
struct is_array_level<std::vector<U, A>> : std::true_type {};

// Innermost element of nested arrays (may be std::optional<S>) and its depth.
template <class T, bool = is_array_level<T>::value> struct array_leaf {
  using type = T;
  static constexpr int depth = 0;
};
template <class T> struct array_leaf<T, true> {
  using type = typename array_leaf<typename T::value_type>::type;
  static constexpr int depth = 1 + array_leaf<typename T::value_type>::depth;
};
template <class T> struct strip_optional { using type = T; };
template <class U> struct strip_optional<std::optional<U>> { using type = U; };

template <class S>
constexpr bool scalar_accepts_array(oid_t o) noexcept {
  if constexpr (requires { type_traits<S>::accepts_array(o); }) return type_traits<S>::accepts_array(o);
  else if constexpr (requires { type_traits<S>::array_oid; }) return o == type_traits<S>::array_oid;
  else return o != 0 && o == value_traits<S>::array_oid();  // a user type: from the OID map
}
/// The array type OID of element type S (fixed, or from the OID map for user types).
template <class S>
constexpr oid_t array_oid_of() noexcept {
  if constexpr (requires { type_traits<S>::array_oid; }) return type_traits<S>::array_oid;
  else return value_traits<S>::array_oid();
}

template <class S>
void encode_scalar(const S& v, std::string& out, std::error_code& ec) {
  if constexpr (requires { type_traits<S>::encode(v, out, ec); }) type_traits<S>::encode(v, out, ec);
  else type_traits<S>::encode(v, out);
}
}  // namespace detail

/// A plain scalar: never NULL.
template <class T>
  requires scalar_type<T>
struct value_traits<T> {
  using scalar = T;
  static constexpr oid_t type_oid() noexcept { return type_traits<T>::type_oid; }
  static constexpr bool accepts(oid_t o) noexcept { return type_traits<T>::accepts(o); }
  /// Appends the binary value; returns false for NULL (nothing appended).
  static bool encode(const T& v, std::string& out, std::error_code& ec) {
    detail::encode_scalar<T>(v, out, ec);
    return true;
  }
  /// len < 0 means NULL.
  static std::error_code decode(const char* p, int len, T& out) {
    if (len < 0) return make_error_code(errc::unexpected_null);
    return type_traits<T>::decode(p, len, out);
  }
};

/// std::optional<T>: NULL <-> nullopt.
template <class U>
struct value_traits<std::optional<U>> {
  using scalar = typename value_traits<U>::scalar;
  static constexpr oid_t type_oid() noexcept { return value_traits<U>::type_oid(); }
  static constexpr bool accepts(oid_t o) noexcept { return value_traits<U>::accepts(o); }
  static bool encode(const std::optional<U>& v, std::string& out, std::error_code& ec) {
    if (!v) return false;
    return value_traits<U>::encode(*v, out, ec);
  }
  static std::error_code decode(const char* p, int len, std::optional<U>& out) {
    if (len < 0) {
      out.reset();
      return detail::ok();
    }
    auto ec = value_traits<U>::decode(p, len, out.emplace());
    if (ec) out.reset();
    return ec;
  }
};

namespace detail {
struct array_writer {
  std::string& out;
  std::error_code& ec;
  std::vector<std::int32_t> shape;
  bool has_null = false;

  template <class V>
  void write(const V& v, int depth) {
    if (static_cast<std::int64_t>(v.size()) != shape[static_cast<std::size_t>(depth)]) {
      ec = make_error_code(errc::invalid_value);  // ragged nested vectors
      return;
    }
    for (const auto& e : v) {
      if (ec) return;
      using E = std::decay_t<decltype(e)>;
      if constexpr (is_array_level<E>::value) {
        write(e, depth + 1);
      } else {
        std::size_t at = out.size();
        store_be<std::int32_t>(out, 0);
        if (!value_traits<E>::encode(e, out, ec)) {
          patch_be32(out, at, -1);
          has_null = true;
        } else {
          patch_be32(out, at, static_cast<std::int32_t>(out.size() - at - 4));
        }
      }
    }
  }
};

struct array_reader {
  const char* p;
  const char* end;
  std::vector<std::int32_t> shape;

  template <class V>
  std::error_code read(V& v, int depth) {
    auto n = static_cast<std::size_t>(shape[static_cast<std::size_t>(depth)]);
    v.clear();
    v.resize(n);
    if constexpr (std::is_same_v<typename V::value_type, bool>) {  // vector<bool> proxies
      for (std::size_t i = 0; i < n; ++i) {
        if (end - p < 4) return make_error_code(errc::invalid_value);
        auto len = load_be<std::int32_t>(p);
        p += 4;
        if (len > end - p) return make_error_code(errc::invalid_value);
        bool b = false;
        if (auto ec = value_traits<bool>::decode(p, len, b)) return ec;
        v[i] = b;
        if (len > 0) p += len;
      }
      return detail::ok();
    } else {
    for (auto& e : v) {
      using E = std::decay_t<decltype(e)>;
      if constexpr (is_array_level<E>::value) {
        if (auto ec = read(e, depth + 1)) return ec;
      } else {
        if (end - p < 4) return make_error_code(errc::invalid_value);
        auto len = load_be<std::int32_t>(p);
        p += 4;
        if (len > end - p) return make_error_code(errc::invalid_value);
        if (auto ec = value_traits<E>::decode(p, len, e)) return ec;
        if (len > 0) p += len;
      }
    }
    return detail::ok();
    }
  }
};
}  // namespace detail

/// std::vector<T> (T not std::byte): a PostgreSQL array. Nested vectors give N dimensions;
/// std::vector<std::optional<T>> allows NULL elements. An empty vector is '{}'.
template <class T>
  requires detail::is_array_level<T>::value
struct value_traits<T> {
  using leaf = typename detail::array_leaf<T>::type;
  using scalar = typename detail::strip_optional<leaf>::type;
  static constexpr int dims = detail::array_leaf<T>::depth;
  static_assert(requires { value_traits<scalar>::type_oid(); }, "array element is not a PostgreSQL type");

  static constexpr oid_t type_oid() noexcept { return detail::array_oid_of<scalar>(); }
  static constexpr bool accepts(oid_t o) noexcept { return detail::scalar_accepts_array<scalar>(o); }

  static bool encode(const T& v, std::string& out, std::error_code& ec) {
    detail::array_writer w{out, ec, {}};
    shape_of(v, 0, w.shape);
    bool empty = false;
    for (auto s : w.shape) empty = empty || s == 0;
    std::size_t head = out.size();
    detail::store_be<std::int32_t>(out, empty ? 0 : dims);
    detail::store_be<std::int32_t>(out, 0);
    detail::store_be<std::int32_t>(out, static_cast<std::int32_t>(value_traits<scalar>::type_oid()));
    if (empty) return true;
    for (auto s : w.shape) {
      detail::store_be<std::int32_t>(out, s);
      detail::store_be<std::int32_t>(out, 1);
    }
    w.write(v, 0);
    if (w.has_null) detail::patch_be32(out, head + 4, 1);
    return true;
  }

  static std::error_code decode(const char* p, int len, T& out) {
    if (len < 0) return make_error_code(errc::unexpected_null);
    auto bad = make_error_code(errc::invalid_value);
    if (len < 12) return bad;
    const char* end = p + len;
    auto ndim = detail::load_be<std::int32_t>(p);
    auto elem = static_cast<oid_t>(detail::load_be<std::int32_t>(p + 8));
    p += 12;
    if (ndim == 0) {
      out.clear();
      return detail::ok();
    }
    if (ndim != dims) return bad;
    if (!value_traits<scalar>::accepts(elem)) return make_error_code(errc::type_mismatch);
    if (end - p < 8LL * ndim) return bad;
    detail::array_reader r{nullptr, end, {}};
    std::int64_t total = 1;
    for (int i = 0; i < ndim; ++i, p += 8) {
      auto n = detail::load_be<std::int32_t>(p);
      if (n < 0) return bad;
      total *= n;
      if (total > (end - p) / 4 + 1) return bad;  // each element needs >= 4 bytes
      r.shape.push_back(n);
    }
    if (total == 0) {  // a zero-length dimension: the empty array, like '{}'
      out.clear();
      return p == end ? std::error_code{} : bad;
    }
    r.p = p;
    if (auto ec = r.read(out, 0)) return ec;
    return r.p == end ? std::error_code{} : bad;
  }

 private:
  template <class V>
  static void shape_of(const V& v, int depth, std::vector<std::int32_t>& shape) {
    shape.push_back(static_cast<std::int32_t>(v.size()));
    if constexpr (detail::is_array_level<typename V::value_type>::value) {
      if (v.empty()) {
        for (int d = depth + 1; d < dims; ++d) shape.push_back(0);
      } else {
        shape_of(v.front(), depth + 1, shape);
      }
    }
  }
};

template <class T>
concept pg_value = requires { value_traits<T>::type_oid(); };

/// Encodes one value into `out` (binary). Returns false for NULL. ec set on bad input.
template <pg_value T>
bool encode_value(const T& v, std::string& out, std::error_code& ec) {
  return value_traits<T>::encode(v, out, ec);
}
/// Decodes one binary value (len < 0: NULL). Does not check the OID.
template <pg_value T>
std::error_code decode_value(const char* p, int len, T& out) {
  return value_traits<T>::decode(p, len, out);
}

}  // namespace inlet::pg
