// The sans-io MIME parser: header index and part tree as views into a chunked input.
//
//   inlet::mime::parser p;
//   p.feed(piece1); p.feed(piece2); ...   // as the message arrives
//   p.finish();
//   const parsed_message& m = p.message();
//
// The parser never copies the message: it records each piece (which must stay alive
// until the parser is reset or destroyed) and indexes it by absolute offsets. It never
// throws on input and never fails: what is wrong is recorded in defects(), and the
// best structure is still produced. Limits (depth, parts, headers, line length) bound
// the work any input can cause.
//
// Allocation: a parser keeps the capacity of its tables across reset(), so parsing a
// stream of messages with one parser reaches 0 heap allocations per message once its
// tables have grown to the largest message seen (see bench/alloc_bench.cpp).
//
// Thread-safety: a parser is used by one thread at a time. A const parsed_message may
// be read by many threads at once.
// Invalidation: parsed_message views (spans, string_views from view()) stay valid until
// the parser is reset()/destroyed or the message is moved from, and only while the fed
// pieces live.
#pragma once

#include <inlet/mime/chunked_view.hpp>
#include <inlet/mime/error.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace inlet::mime {

inline constexpr std::uint32_t no_index = std::numeric_limits<std::uint32_t>::max();

enum class transfer_encoding : std::uint8_t {
  seven_bit,
  eight_bit,
  binary,
  base64,
  quoted_printable,
  unknown,  // anything else (x-uuencode, garbage): body passed through undecoded
};

enum class part_kind : std::uint8_t {
  leaf,       // a body of bytes
  multipart,  // children separated by a boundary
  message,    // message/rfc822 or message/global: one child, the nested message's root
};

/// One header field: name and raw value (after the colon, folding kept, without the
/// final line break). Unfolding and decoding happen on demand (fields.hpp).
struct header_field {
  span name;
  span value;
  std::uint32_t part = 0;
};

/// One node of the part tree. Indices refer to parsed_message::parts().
struct part {
  span header;    // the header block, including the blank line that ends it
  span body;      // raw body: for a multipart, preamble + children + epilogue
  span preamble;  // multipart only
  span epilogue;  // multipart only
  std::uint32_t first_header = 0;  // index into parsed_message::headers()
  std::uint32_t header_count = 0;
  std::uint32_t parent = no_index;
  std::uint32_t first_child = no_index;
  std::uint32_t next_sibling = no_index;
  std::uint32_t child_count = 0;
  std::uint32_t depth = 0;
  std::uint32_t content_type_field = no_index;  // header index, or no_index
  part_kind kind = part_kind::leaf;
  transfer_encoding encoding = transfer_encoding::seven_bit;
  bool explicit_type = false;  // a valid Content-Type was given (else RFC default)

  /// "type/subtype", lower case, RFC defaults applied (text/plain, or message/rfc822
  /// inside multipart/digest).
  std::string_view content_type() const noexcept { return {type_.data(), type_len_}; }
  std::string_view main_type() const noexcept {
    return content_type().substr(0, content_type().find('/'));
  }
  std::string_view sub_type() const noexcept {
    auto t = content_type();
    auto s = t.find('/');
    return s == std::string_view::npos ? std::string_view{} : t.substr(s + 1);
  }
  void set_content_type(std::string_view t) noexcept;

 private:
  std::array<char, 94> type_{};
  std::uint8_t type_len_ = 0;
};

struct options {
  std::uint32_t max_depth = 64;            // nesting of multipart/message parts
  std::uint32_t max_parts = 10000;         // parts per message
  std::uint32_t max_headers = 10000;       // header fields per message (all parts)
  std::uint32_t max_line_length = 65536;   // header lines longer than this are defects
};

/// The result of a parse: the input, the header index, the part tree, the defects.
/// parts()[0] is the root. headers() of part i are
/// headers()[parts()[i].first_header .. + header_count).
class parsed_message {
 public:
  const chunked_view& input() const noexcept { return input_; }
  const std::vector<header_field>& headers() const noexcept { return headers_; }
  const std::vector<part>& parts() const noexcept { return parts_; }
  const std::vector<defect>& defects() const noexcept { return defects_; }
  const part& root() const noexcept { return parts_.front(); }
  span unix_from() const noexcept { return unix_from_; }  // mbox "From " line, if any
  /// A line of the message's own header block ends in CR CR LF (a bare CR before the
  /// line end, as some mailers write it); the line's value excludes both CRs.
  bool cr_cr_lf_in_header() const noexcept { return cr_cr_lf_; }

  /// Bytes of a span (in place, or linearised into `scratch` if it straddles pieces).
  std::string_view view(span s, std::string& scratch) const { return input_.view(s, scratch); }
  std::string copy(span s) const { return input_.copy(s); }

  /// First header of part `p` named `name` (ASCII case-insensitive), or nullptr.
  const header_field* find(std::uint32_t p, std::string_view name) const;
  /// Root-level shortcut.
  const header_field* find(std::string_view name) const { return find(0, name); }

  void clear() noexcept;

 private:
  friend class parser;
  chunked_view input_;
  std::vector<header_field> headers_;
  std::vector<part> parts_;
  std::vector<defect> defects_;
  span unix_from_;
  bool cr_cr_lf_ = false;
};

class parser {
 public:
  explicit parser(options opt = {});

  /// Starts a new message; keeps the capacity of every table.
  void reset() noexcept;
  /// Feeds the next piece of the message. The bytes must outlive the parse result.
  void feed(std::string_view piece);
  /// Declares the end of the message and closes every open part.
  void finish();
  bool finished() const noexcept { return state_ == state::done; }

  const parsed_message& message() const noexcept { return msg_; }
  /// Moves the result out (the parser is reset).
  parsed_message release();

  /// One-shot helpers: reset, feed every piece, finish.
  const parsed_message& parse(std::string_view flat);
  const parsed_message& parse(const chunked_view& pieces);

 private:
  enum class state : std::uint8_t { headers, body, done };
  struct open_part {
    std::uint32_t part;
    bool has_boundary = false;
    bool seen_first = false;
    bool closed = false;
    std::uint16_t boundary_len = 0;
    std::uint32_t last_child = no_index;
    std::array<char, 256> boundary;
    std::string_view boundary_view() const noexcept { return {boundary.data(), boundary_len}; }
  };

  static constexpr std::size_t max_boundary_line = 1024;
  static constexpr std::size_t max_name_scan = 998;  // RFC 5322 line limit

  void run(bool at_end);
  bool step_headers(bool at_end);
  bool step_body(bool at_end);
  void header_line(std::size_t ls, std::size_t content_end, std::size_t le, std::string_view head);
  void end_field();
  void end_headers(std::size_t body_begin);
  void resolve_type(std::uint32_t idx, open_part& e);
  bool boundary_line(std::size_t ls, std::size_t le);
  void on_boundary(std::size_t k, std::size_t ls, std::size_t le, bool close);
  void close_above(std::size_t keep, std::size_t end);
  std::uint32_t new_part(std::size_t header_begin);
  void add_defect(errc e, std::size_t off);
  std::size_t find_byte(char c, std::size_t from) const noexcept;
  char byte(std::size_t off) const noexcept;
  std::size_t content_end_before(std::size_t ls, std::size_t floor) const noexcept;
  bool parse_content_type(part& p, std::string_view value, open_part& e);

  options opt_;
  parsed_message msg_;
  std::vector<open_part> stack_;
  std::string scratch_;
  std::string scratch2_;
  std::string line_scratch_;
  state state_ = state::headers;
  std::size_t pos_ = 0;         // next unprocessed byte (a line start in headers)
  std::size_t scan_ = 0;        // body: where the next '-' search starts
  std::size_t field_ = SIZE_MAX;  // header being accumulated (index), or none
  std::uint32_t open_boundaries_ = 0;
  bool part_limit_hit_ = false;
  bool header_limit_hit_ = false;
  mutable std::size_t hint_ = 0;  // piece index cache for byte()
};

}  // namespace inlet::mime
