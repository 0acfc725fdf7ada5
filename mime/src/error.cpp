#include <inlet/mime/error.hpp>

#include <string>

namespace inlet::mime {

std::string_view defect_name(errc e) noexcept {
  switch (e) {
    case errc::ok: return "Ok";
    case errc::start_boundary_not_found: return "StartBoundaryNotFoundDefect";
    case errc::close_boundary_not_found: return "CloseBoundaryNotFoundDefect";
    case errc::no_boundary_in_multipart: return "NoBoundaryInMultipartDefect";
    case errc::missing_header_body_separator: return "MissingHeaderBodySeparatorDefect";
    case errc::first_header_line_is_continuation: return "FirstHeaderLineIsContinuationDefect";
    case errc::invalid_header_name: return "MisplacedEnvelopeHeaderDefect";
    case errc::multipart_invariant_violation: return "InvalidMultipartContentTransferEncodingDefect";
    case errc::depth_limit: return "DepthLimitDefect";
    case errc::part_limit: return "PartLimitDefect";
    case errc::header_limit: return "HeaderLimitDefect";
    case errc::line_too_long: return "LineTooLongDefect";
    case errc::invalid_base64_characters: return "InvalidBase64CharactersDefect";
    case errc::invalid_base64_padding: return "InvalidBase64PaddingDefect";
    case errc::invalid_quoted_printable: return "InvalidQuotedPrintableDefect";
    case errc::unknown_charset: return "CharsetError";
    case errc::invalid_multibyte_sequence: return "UndecodableBytesDefect";
    case errc::unknown_transfer_encoding: return "UnknownTransferEncodingDefect";
    case errc::invalid_address: return "InvalidAddressDefect";
    case errc::invalid_date: return "InvalidDateDefect";
    case errc::invalid_encoded_word: return "InvalidEncodedWordDefect";
  }
  return "UnknownDefect";
}

namespace {
class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "inlet.mime"; }
  std::string message(int ev) const override {
    return std::string(defect_name(static_cast<errc>(ev)));
  }
};
}  // namespace

const std::error_category& mime_category() noexcept {
  static const category c;
  return c;
}

}  // namespace inlet::mime
