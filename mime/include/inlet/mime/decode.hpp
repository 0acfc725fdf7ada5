// Incremental body decoders (base64, quoted-printable) and charset conversion to UTF-8.
//
// Each decoder is a small state object: feed it the body piece by piece (pieces may
// split anywhere, even inside "=3D" or a base64 quad) and it produces exactly the bytes
// a one-shot decode would. Output goes either into a caller buffer
// (decode_block: `out` must hold in.size() + block_slack bytes) or to a sink called
// with std::string_view pieces.
//
// Thread-safety: one decoder per thread; the objects hold no global state.
#pragma once

#include <inlet/mime/error.hpp>
#include <inlet/mime/parser.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace inlet::mime {

/// A non-owning reference to a callable `void(std::string_view)`.
class text_sink {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, text_sink>)
  text_sink(F&& f) noexcept  // NOLINT: implicit by design
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, std::string_view s) { (*static_cast<std::remove_reference_t<F>*>(o))(s); }) {}
  void operator()(std::string_view s) const { call_(obj_, s); }

 private:
  void* obj_;
  void (*call_)(void*, std::string_view);
};

inline constexpr std::size_t block_slack = 512;

class base64_decoder {
 public:
  /// Decodes `in` into `out` (capacity in.size() + block_slack). Returns bytes written.
  std::size_t decode_block(std::string_view in, char* out) noexcept;
  /// Emits what is left of an incomplete quad (out: 4 bytes). Returns bytes written.
  std::size_t finish_block(char* out) noexcept;
  void reset() noexcept { *this = base64_decoder{}; }
  bool bad_characters() const noexcept { return bad_chars_; }
  bool bad_padding() const noexcept { return bad_pad_; }

 private:
  std::size_t flush_partial(char* out) noexcept;
  std::uint32_t acc_ = 0;
  int n_ = 0;
  bool bad_chars_ = false;
  bool bad_pad_ = false;
};

class qp_decoder {
 public:
  /// Decodes `in` into `out` (capacity in.size() + block_slack). Returns bytes written.
  std::size_t decode_block(std::string_view in, char* out) noexcept;
  /// Flushes pending state at the end of the body (out: block_slack bytes).
  std::size_t finish_block(char* out) noexcept;
  void reset() noexcept { *this = qp_decoder{}; }
  bool bad_sequences() const noexcept { return bad_; }

 private:
  enum class st : std::uint8_t { normal, eq, eq_hex, eq_cr, cr };
  char* flush_ws(char* o) noexcept;
  st st_ = st::normal;
  char hex1_ = 0;
  std::uint16_t ws_n_ = 0;
  char ws_[128] = {};
  bool bad_ = false;
};

/// Decodes the transfer encoding of a body given piece by piece, into a sink.
class body_decoder {
 public:
  explicit body_decoder(transfer_encoding e) noexcept : enc_(e) {}
  void feed(std::string_view in, text_sink sink);
  void finish(text_sink sink);
  /// Defects seen so far (base64 characters/padding, bad QP escapes), or errc::ok.
  errc defect() const noexcept;

 private:
  transfer_encoding enc_;
  base64_decoder b64_;
  qp_decoder qp_;
};

/// Converts bytes in a named charset to UTF-8, incrementally. Invalid or unconvertible
/// input becomes U+FFFD. Unknown charsets (and us-ascii / none) are read as UTF-8.
/// Thread-safety: one converter per thread. Holds an iconv descriptor (not copyable).
class charset_converter {
 public:
  explicit charset_converter(std::string_view charset);
  ~charset_converter();
  charset_converter(const charset_converter&) = delete;
  charset_converter& operator=(const charset_converter&) = delete;

  void feed(std::string_view in, text_sink sink);
  void finish(text_sink sink);
  /// False when the charset was unknown and UTF-8 was assumed.
  bool known() const noexcept { return known_; }
  bool had_invalid() const noexcept { return invalid_; }

 private:
  void convert(std::string_view in, bool at_end, text_sink sink);
  void* cd_ = nullptr;  // iconv_t, or null for the built-in UTF-8 path
  bool known_ = true;
  bool invalid_ = false;
  std::string carry_;
};

/// The iconv name for a charset label as mail uses it ("ks_c_5601-1987" -> "CP949",
/// "x-sjis" -> "SHIFT_JIS", "utf8" -> "UTF-8", ...); empty for UTF-8/ASCII.
std::string canonical_charset(std::string_view label);

/// Converts a whole string (convenience over charset_converter).
std::string to_utf8(std::string_view bytes, std::string_view charset);

/// One-shot helpers (tests, fuzzers, RFC 2047).
std::string decode_base64(std::string_view in, bool* defect = nullptr);
std::string decode_quoted_printable(std::string_view in, bool* defect = nullptr);

}  // namespace inlet::mime
