#include "inlet/filter/error.hpp"

namespace inlet::filter {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "inlet.filter"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::ok: return "success";
      case errc::file_unreadable: return "term file cannot be read";
      case errc::empty_term: return "empty term";
      case errc::term_too_long: return "term too long";
      case errc::bad_weight: return "weight after the tab is not a finite number";
      case errc::invalid_utf8: return "term is not valid UTF-8";
      case errc::invalid_regex: return "invalid regular expression";
      case errc::regex_unsupported:
        return "regular expressions are not supported by the Aho-Corasick engine";
      case errc::too_many_terms: return "too many terms";
      case errc::engine_failure: return "filter engine failure";
      case errc::engine_unavailable: return "filter engine not available";
      case errc::nul_in_term: return "NUL byte in term";
    }
    return "unknown inlet.filter error";
  }
};

}  // namespace

const std::error_category& filter_category() noexcept {
  static const category c;
  return c;
}

std::string term_error::to_string() const {
  std::string s;
  if (line != 0) s = "line " + std::to_string(line) + ": ";
  s += code.message();
  if (!detail.empty()) s += ": " + detail;
  return s;
}

}  // namespace inlet::filter
