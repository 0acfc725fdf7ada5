// Benchmark-only streaming MIME walker: turns a raw message, fed in the fragments it
// arrived in, into decoded UTF-8 text streams (Subject/Comments/Keywords headers, and
// every non-attachment text/* part after quoted-printable/base64 decoding and
// ISO-8859-1/Windows-1252 -> UTF-8 conversion; other charsets pass through).
// It is NOT the product's MIME parser (inlet::mime): no RFC 2047, no message/rfc822
// recursion, minimal header grammar. It exists so the filter benchmark includes
// transfer decoding and fragment handling on the message path, and so the raw
// Hyperscan reference scans exactly the same decoded text.
//
// Body runs are passed to the sink without copying when no decoding is needed; only
// a trailing partial line that might begin a boundary is carried to the next fragment.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "inlet/filter/filter.hpp"

namespace inlet::filter::bench {

class text_sink {
 public:
  virtual ~text_sink() = default;
  virtual void begin(stream_kind kind) = 0;
  virtual void piece(std::string_view bytes) = 0;
  virtual void end() = 0;
};

class mini_mime {
 public:
  explicit mini_mime(text_sink& sink) : sink_(sink) {}
  void feed(std::string_view fragment);
  void finish();

 private:
  enum class cte { identity, qp, base64 };
  enum class cs { utf8, latin1, cp1252 };
  struct part {
    bool text = true;        // scanned
    bool multipart = false;
    bool html = false;
    std::string boundary;    // "--" + boundary when multipart
    cte enc = cte::identity;
    cs charset = cs::utf8;
  };

  void feed_headers(std::string_view& in);
  void parse_headers(std::string_view block);
  void process_body(std::string_view& in);
  bool handle_line(std::string_view line);  // true if it was a boundary line
  void emit(std::string_view run);
  void close_stream();
  std::string_view decode(std::string_view run);
  std::string_view convert(std::string_view bytes);

  text_sink& sink_;
  bool in_headers_ = true;
  bool top_level_ = true;
  bool line_start_ = true;      // next body byte starts a line
  bool stream_open_ = false;
  std::string header_buf_;
  std::string carry_;           // partial body line that may be a boundary
  std::vector<std::string> boundaries_;
  part cur_;
  bool skipping_ = false;       // preamble/epilogue or non-text part
  // decoder state
  unsigned b64_acc_ = 0;
  int b64_bits_ = 0;
  char qp_pending_[3] = {};
  int qp_npending_ = 0;
  std::vector<char> buf1_, buf2_;
};

}  // namespace inlet::filter::bench
