#include "inlet/load/error.hpp"

namespace inlet::load {
namespace {
class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "inlet.load"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::malformed_reply: return "malformed SMTP reply line";
      case errc::reply_too_long: return "SMTP reply line too long";
      case errc::inconsistent_code: return "multi-line reply with differing codes";
      case errc::unexpected_reply: return "reply received while none was expected";
      case errc::empty_corpus: return "no message in the corpus";
      case errc::bad_proc_file: return "unexpected /proc file format";
      case errc::tls_failed: return "TLS failed";
      case errc::tls_closed: return "TLS session closed by the server";
    }
    return "unknown inlet.load error";
  }
};
}  // namespace

const std::error_category& load_category() noexcept {
  static const category c;
  return c;
}
}  // namespace inlet::load
